package dev.postbox.runtime.api;

/**
 * Records events in the caller's JTA transaction; inject it with CDI.
 *
 * <pre>{@code
 * @Inject Outbox outbox;
 *
 * @Transactional
 * public void capture(Order order) {
 *   orders.persist(order);
 *   outbox.record(OutboxEvent.builder()
 *       .destination("payments").key(order.id()).type("OrderCaptured").json(toJson(order)).build());
 * }
 * }</pre>
 */
public interface Outbox {

  /**
   * Writes the event next to the caller's business rows, in the same JTA transaction: it exists if
   * and only if that transaction commits, and is published after the commit.
   *
   * @return the event id
   * @throws IllegalStateException no JTA transaction is active; nothing is recorded or published
   */
  String record(OutboxEvent event);
}
