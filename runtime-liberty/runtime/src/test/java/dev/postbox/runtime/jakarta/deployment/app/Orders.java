package dev.postbox.runtime.jakarta.deployment.app;

import dev.postbox.runtime.api.Outbox;
import dev.postbox.runtime.api.OutboxEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.persistence.EntityManager;
import jakarta.persistence.PersistenceContext;
import jakarta.transaction.Transactional;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/** Places an order: the order row and its {@code OrderPlaced} event in one JTA transaction. */
@ApplicationScoped
public class Orders {

  @PersistenceContext EntityManager em;

  @Inject Outbox outbox;

  @Inject
  @ConfigProperty(name = "deployment.topic")
  String topic;

  /**
   * @param thenFail throw after both writes, so the transaction rolls back
   * @return the event id
   */
  @Transactional
  public String place(String orderId, long amountCents, boolean thenFail) {
    em.persist(new PlacedOrder(orderId, amountCents));
    String eventId =
        outbox.record(
            OutboxEvent.builder()
                .destination(topic)
                .key(orderId)
                .type("OrderPlaced")
                .source("urn:postbox:deployment")
                .json("{\"amountCents\":" + amountCents + "}")
                .build());
    if (thenFail) {
      throw new IllegalStateException("order " + orderId + " rolled back on purpose");
    }
    return eventId;
  }
}
