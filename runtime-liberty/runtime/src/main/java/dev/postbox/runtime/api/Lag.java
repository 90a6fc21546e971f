package dev.postbox.runtime.api;

import java.time.Instant;

/**
 * Undispatched outbox work: pending and failed counts, and when the oldest pending row was recorded
 * (or fell due, for a scheduled one; null when none is pending). Scheduled rows that are not yet
 * due are not lag: they are counted apart, with the next due time.
 *
 * @param scheduled rows waiting for their due time
 * @param nextDue the earliest due time among them, or null
 */
public record Lag(
    long pending, long failed, Instant oldestPending, long scheduled, Instant nextDue) {

  /** Without scheduled rows. */
  public Lag(long pending, long failed, Instant oldestPending) {
    this(pending, failed, oldestPending, 0, null);
  }
}
