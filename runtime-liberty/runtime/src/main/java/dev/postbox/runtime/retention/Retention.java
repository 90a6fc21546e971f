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

  private static final System.Logger LOG = System.getLogger(Retention.class.getName());

  private final Transactions tx;
  private final Dialect dialect;
  private final Clock clock;
  private final DatePartitions.Table table;

  public Retention(Transactions tx, Dialect dialect, Clock clock) {
    this(tx, dialect, clock, DatePartitions.Table.OUTBOX);
  }

  /** Retention of either table; the outbox's {@link #purge} deletes, the inbox's has its own. */
  public Retention(Transactions tx, Dialect dialect, Clock clock, DatePartitions.Table table) {
    this.tx = tx;
    this.dialect = dialect;
    this.clock = clock;
    this.table = table;
  }

  /**
   * If the table is date-partitioned, runs {@link DatePartitions#maintain} and returns true;
   * otherwise returns false and the caller deletes.
   */
  public boolean maintainPartitions(Duration keep) {
    // Looked up at every run, never remembered: a DELETE written for the plain table must not
    // run on a partitioned one (PostgreSQL's ctid is unique only within a partition).
    if (!tx.inTransaction(c -> DatePartitions.isPartitioned(c, dialect, table))) {
      return false;
    }
    DatePartitions.Run run = new DatePartitions(tx, clock, table).maintain(keep);
    if (run.switched() || !run.dropped().isEmpty()) {
      LOG.log(
          System.Logger.Level.INFO,
          table.tableName()
              + " date partitions: now bucket "
              + run.current()
              + (run.dropped().isEmpty() ? "" : "; dropped buckets " + run.dropped()));
    }
    return true;
  }

  /**
   * Deletes in batches of {@code batch} until a batch comes back short, and returns the total; or,
   * if the outbox is date-partitioned, drops the buckets past {@code keep} and returns 0.
   */
  public int purge(Duration keep, int batch) {
    if (maintainPartitions(keep)) {
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
