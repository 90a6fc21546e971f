package dev.postbox.runtime.retention;

import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Transactions;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;

/**
 * The one batched purge, for the outbox and the inbox alike: deletes rows older than the retention
 * in bounded batches, each in a transaction of its own, so that no single huge DELETE ever locks
 * the table. A date-partitioned table ({@link DatePartitions}) drops whole buckets instead.
 *
 * <ul>
 *   <li>{@link #outbox}: settled rows (dispatched or discarded).
 *   <li>{@link #inbox}: processed rows past the dedup window. A redelivery older than the window is
 *       processed again, so the window must outlast the broker's redelivery horizon. Rows still
 *       waiting for a deferred worker (RECEIVED) are kept, however old.
 * </ul>
 */
public final class Retention {

  /**
   * The default dedup window: covers Kafka's default horizon (7 days of retention plus 7-day
   * segments) and SQS's longest (14 days).
   */
  public static final Duration DEFAULT_DEDUP_WINDOW = Duration.ofDays(15);

  private final Transactions tx;
  private final Dialect dialect;
  private final Clock clock;
  private final DatePartitions.Table table;
  private final String deleteBatch;
  private final RetentionRepository repo;

  private Retention(
      Transactions tx,
      Dialect dialect,
      Clock clock,
      DatePartitions.Table table,
      String deleteBatch) {
    this.tx = tx;
    this.dialect = dialect;
    this.clock = clock;
    this.table = table;
    this.deleteBatch = deleteBatch;
    this.repo = new RetentionRepository(dialect);
  }

  /** The outbox's: settled rows. */
  public static Retention outbox(Transactions tx, Dialect dialect, Clock clock) {
    return new Retention(
        tx, dialect, clock, DatePartitions.Table.OUTBOX, dialect.deleteSettledBatch());
  }

  /**
   * The outbox's cancelled and expired rows (a second statement, for its own partial index); a
   * date-partitioned outbox drops them with their bucket.
   */
  public static Retention outboxEnded(Transactions tx, Dialect dialect, Clock clock) {
    return new Retention(
        tx, dialect, clock, DatePartitions.Table.OUTBOX, dialect.deleteEndedBatch());
  }

  /** The inbox's: processed rows. */
  public static Retention inbox(Transactions tx, Dialect dialect, Clock clock) {
    return new Retention(
        tx, dialect, clock, DatePartitions.Table.INBOX, dialect.deleteProcessedInboxBatch());
  }

  /**
   * Deletes in batches of {@code batch} until a batch comes back short, and returns the total; or,
   * if the table is date-partitioned, drops the buckets past {@code keep} and returns 0.
   */
  public int purge(Duration keep, int batch) {
    if (DatePartitions.maintainIfPartitioned(tx, dialect, clock, table, keep)) {
      return 0;
    }
    Instant cutoff = clock.instant().minus(keep);
    int total = 0;
    while (true) {
      int deleted = purgeBatch(cutoff, batch);
      total += deleted;
      if (deleted < batch) {
        return total;
      }
    }
  }

  /** One bounded batch, in its own transaction: at most {@code batch} rows before the cutoff. */
  public int purgeBatch(Instant cutoff, int batch) {
    return tx.inTransaction(c -> repo.deleteBatch(c, deleteBatch, cutoff, batch));
  }
}
