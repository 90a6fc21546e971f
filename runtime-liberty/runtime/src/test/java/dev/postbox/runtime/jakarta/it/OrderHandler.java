package dev.postbox.runtime.jakarta.it;

import dev.postbox.runtime.api.Handles;
import dev.postbox.runtime.api.JsonEventHandler;
import dev.postbox.spi.Envelope;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

/** A typed handler: JSON payloads decoded into {@link Order}; writes "key:seq" per event. */
@ApplicationScoped
@Handles(destination = "${it.orders.topic}", group = "orders", types = "OrderCaptured")
public class OrderHandler extends JsonEventHandler<OrderHandler.Order> {

  /** The payload. Public with a no-arg constructor, for JSON-B. */
  public static class Order {
    public int seq;
    public long amountCents;
  }

  @Inject Effects effects;

  @Override
  protected void handle(Order order, Envelope event) throws Exception {
    effects.write("orders", event, event.key() + ":" + order.seq);
  }
}
