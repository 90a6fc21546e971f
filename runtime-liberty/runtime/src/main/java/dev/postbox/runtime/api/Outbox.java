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

  /**
   * As {@link #record(OutboxEvent)}, published at the schedule's due time instead of at the commit,
   * and never after its expiry. Until it is due the event waits in the outbox and can be {@link
   * #cancel cancelled}. By default it does not hold its key's other events back: they go out as
   * they come, and it goes when due (see {@link Schedule#inKeyOrder()}).
   *
   * @return the event id
   * @throws IllegalStateException no JTA transaction is active; nothing is recorded
   * @throws dev.postbox.spi.InvalidEventException the event expires before it is due
   */
  String record(OutboxEvent event, Schedule schedule);

  /**
   * Cancels a scheduled event in the caller's JTA transaction: once that commits the event is never
   * published. Returns whether the event was still scheduled; false when it is unknown, was
   * recorded without a delay, is already due and claimed by the relay, or was cancelled before. A
   * cancel that commits before the relay claims the due event always wins; a claim that commits
   * first makes the cancel return false.
   *
   * @throws IllegalStateException no JTA transaction is active
   */
  boolean cancel(String eventId);
}
