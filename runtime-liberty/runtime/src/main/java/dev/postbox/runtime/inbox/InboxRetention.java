package dev.postbox.runtime.inbox;

import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Transactions;
import dev.postbox.runtime.retention.DatePartitions;
import java.sql.PreparedStatement;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;

/**
 * Deletes inbox rows older than the dedup window, in bounded batches, each in a transaction of its
 * own: no single huge DELETE ever locks the table. A redelivery older than the window is processed
 * again, so the window must outlast the broker's redelivery horizon. Rows still waiting for a
 * deferred worker (RECEIVED) are kept, however old.
 */
final class InboxRetention {

  /** The default dedup window. */
  /**
   * Covers Kafka's default horizon (7 days of retention plus 7-day segments) and SQS's longest (14
   * days).
   */
  public static final Duration DEFAULT_WINDOW = Duration.ofDays(15);

  private final Transactions tx;
  private final Dialect dialect;
  private final Clock clock;
  private final String deleteBatch;

  public InboxRetention(Transactions tx, Dialect dialect, Clock clock) {
    this.tx = tx;
    this.dialect = dialect;
    this.clock = clock;
    this.deleteBatch = dialect.deleteProcessedInboxBatch();
  }

  /**
   * Deletes rows received before now − window, batch by batch, and returns how many; or, if the
   * inbox is date-partitioned, drops the buckets past the window and returns 0.
   */
  public int purge(Duration window, int batch) {
    if (DatePartitions.maintainIfPartitioned(
        tx, dialect, clock, DatePartitions.Table.INBOX, window)) {
      return 0;
    }
    Instant cutoff = clock.instant().minus(window);
    int total = 0;
    while (true) {
      int deleted = purgeBatch(cutoff, batch);
      total += deleted;
      if (deleted < batch) {
        return total;
      }
    }
  }

  /** One bounded batch in its own transaction. */
  public int purgeBatch(Instant cutoff, int batch) {
    return tx.inTransaction(
        c -> {
          try (PreparedStatement ps = c.prepareStatement(deleteBatch)) {
            dialect.bind(ps, 1, cutoff);
            ps.setInt(2, batch);
            return ps.executeUpdate();
          }
        });
  }
}
