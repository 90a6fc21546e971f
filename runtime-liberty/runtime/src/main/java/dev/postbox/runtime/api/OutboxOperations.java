package dev.postbox.runtime.api;

import java.time.Instant;
import java.util.List;
import java.util.Set;

/**
 * What an operator may see and do with the outbox: lag, FAILED rows and what to do with them,
 * partition leases, and how this instance's relay fares. Every method but the counts reads the
 * database; each call is its own transaction.
 */
public interface OutboxOperations {

  /** Pending and failed counts and the oldest pending row, read now. */
  Lag lag();

  /** FAILED rows, oldest first, at most {@code limit}. */
  List<FailedRow> failed(int limit);

  /**
   * Sends a FAILED row again from its first attempt; false if there is no FAILED row by that id.
   */
  boolean retry(long id);

  /**
   * Gives up on a FAILED row, or on a PENDING one that keeps failing; later rows of its key flow
   * again. False if there is no such row.
   */
  boolean discard(long id);

  /** Sends every FAILED row the filter matches again; returns how many. */
  int retryAll(FailedFilter filter);

  /** Gives up on every FAILED row the filter matches; returns how many. */
  int discardAll(FailedFilter filter);

  /**
   * Scheduled events the filter matches, in id order (oldest recorded first), after the row id
   * {@code afterId} (0 for the first page), at most {@code limit}.
   */
  List<ScheduledRow> scheduled(ScheduledFilter filter, long afterId, int limit);

  /**
   * Cancels a scheduled event by its event id, in a transaction of its own; false when it is not
   * scheduled (unknown, published, due and claimed, or cancelled before).
   */
  boolean cancelScheduled(String eventId);

  /** Cancels every scheduled event the filter matches; returns how many. */
  int cancelAllScheduled(ScheduledFilter filter);

  /** Every partition's lease, by partition, in the database's clock (see {@link #databaseNow}). */
  List<Lease> leases();

  /** The database's clock, in which lease times are written and compared. */
  Instant databaseNow();

  /** Events this instance's relay has published since it started; 0 when no relay runs here. */
  long publishedByThisInstance();

  /** The partitions whose leases this instance's relay holds now. */
  Set<Integer> ownedPartitions();

  /** The destinations the broker does not serve now, as this instance's relay sees them. */
  List<BrokerOutage> brokerOutages();
}
