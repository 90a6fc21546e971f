package dev.postbox.runtime.retention;

import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Transactions;
import java.sql.PreparedStatement;
import java.time.Clock;
import java.time.Duration;

/**
 * Deletes settled outbox rows (dispatched or discarded) older than the retention, in bounded
 * batches, each in a transaction of its own: no single huge DELETE ever locks the table. A
 * date-partitioned outbox ({@link DatePartitions}) drops whole buckets instead.
 */
public final class Retention {

  private final Transactions tx;
  private final Dialect dialect;
  private final Clock clock;

  public Retention(Transactions tx, Dialect dialect, Clock clock) {
    this.tx = tx;
    this.dialect = dialect;
    this.clock = clock;
  }

  /**
   * Deletes in batches of {@code batch} until a batch comes back short, and returns the total; or,
   * if the outbox is date-partitioned, drops the buckets past {@code keep} and returns 0.
   */
  public int purge(Duration keep, int batch) {
    if (DatePartitions.maintainIfPartitioned(
        tx, dialect, clock, DatePartitions.Table.OUTBOX, keep)) {
      return 0;
    }
    java.time.Instant cutoff = clock.instant().minus(keep);
    int total = 0;
    while (true) {
      int deleted = purgeBatch(cutoff, batch);
      total += deleted;
      if (deleted < batch) {
        return total;
      }
    }
  }

  /**
   * One bounded batch, in its own transaction: at most {@code batch} rows settled before the
   * cutoff.
   */
  public int purgeBatch(java.time.Instant cutoff, int batch) {
    return tx.inTransaction(
        c -> {
          try (PreparedStatement ps = c.prepareStatement(dialect.deleteSettledBatch())) {
            dialect.bind(ps, 1, cutoff);
            ps.setInt(2, batch);
            return ps.executeUpdate();
          }
        });
  }
}
