package dev.postbox.runtime.jakarta.deployment.app;

import dev.postbox.runtime.api.EventHandler;
import dev.postbox.runtime.api.Handles;
import dev.postbox.runtime.api.UnprocessableEventException;
import dev.postbox.spi.Envelope;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.persistence.EntityManager;
import jakarta.persistence.PersistenceContext;
import java.nio.charset.StandardCharsets;

/**
 * The inbox handler: one charge per {@code OrderPlaced}, through JPA in the inbox's transaction. A
 * payload that is not an amount is poison: refused at once, so it ends as a dead letter.
 */
@ApplicationScoped
@Handles(destination = "${deployment.topic}", group = "charges", types = "OrderPlaced")
public class Charges implements EventHandler {

  @PersistenceContext EntityManager em;

  @Override
  public void handle(Envelope event) {
    String payload = new String(event.payload(), StandardCharsets.UTF_8);
    if (!payload.startsWith("{\"amountCents\":")) {
      throw new UnprocessableEventException("not an order: " + payload, null);
    }
    em.persist(new Charge(event.id(), event.key()));
  }
}
