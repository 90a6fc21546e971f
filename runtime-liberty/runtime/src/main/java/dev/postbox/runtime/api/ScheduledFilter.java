package dev.postbox.runtime.api;

import java.time.Instant;

/**
 * Which scheduled (not yet due) outbox events a listing or a bulk cancel takes; a null field
 * matches every event.
 *
 * @param destination exactly this destination
 * @param type exactly this event type
 * @param dueFrom due at or after this time
 * @param dueBefore due before this time
 */
public record ScheduledFilter(String destination, String type, Instant dueFrom, Instant dueBefore) {

  /** Every scheduled event. */
  public static final ScheduledFilter ALL = new ScheduledFilter(null, null, null, null);
}
