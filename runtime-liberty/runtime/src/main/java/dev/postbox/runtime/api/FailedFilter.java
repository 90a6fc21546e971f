package dev.postbox.runtime.api;

import java.time.Instant;

/**
 * Which FAILED outbox rows a bulk retry or discard takes; a null field matches every row.
 *
 * @param destination exactly this destination
 * @param type exactly this event type
 * @param createdFrom recorded at or after this time
 * @param createdBefore recorded before this time
 */
public record FailedFilter(
    String destination, String type, Instant createdFrom, Instant createdBefore) {

  /** Every FAILED row. */
  public static final FailedFilter ALL = new FailedFilter(null, null, null, null);
}
