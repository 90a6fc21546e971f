package dev.postbox.runtime.relay;

import dev.postbox.runtime.api.FailedFilter;
import dev.postbox.runtime.api.FailedRow;
import dev.postbox.runtime.api.Lag;
import dev.postbox.runtime.api.Lease;
import dev.postbox.runtime.db.Transactions;
import dev.postbox.runtime.outbox.FailedRowRepository;
import dev.postbox.runtime.outbox.OutboxRepository;
import java.time.Clock;
import java.util.List;

/** What an operator may do with the outbox: see lag and failed rows, retry or discard them. */
final class OutboxAdmin {

  private final Transactions tx;
  private final OutboxRepository outbox;
  private final FailedRowRepository rows;
  private final Clock clock;

  OutboxAdmin(Transactions tx, OutboxRepository rows, Clock clock) {
    this.tx = tx;
    this.outbox = rows;
    this.rows = new FailedRowRepository(rows.dialect());
    this.clock = clock;
  }

  /** An admin for the outbox in this database, whether or not a relay runs here. */
  public static OutboxAdmin create(
      Transactions tx, dev.postbox.runtime.db.Dialect dialect, int partitions) {
    return new OutboxAdmin(tx, new OutboxRepository(dialect, partitions), Clock.systemUTC());
  }

  /** Pending and failed counts, and the oldest pending row. */
  public Lag lag() {
    return lag(true);
  }

  /** As {@link #lag()}, without counting scheduled rows unless {@code scheduled}. */
  public Lag lag(boolean scheduled) {
    return tx.inTransaction(c -> rows.lag(c, scheduled, clock.instant()));
  }

  /** FAILED rows, oldest first. */
  public List<FailedRow> failed(int limit) {
    return tx.inTransaction(c -> rows.failed(c, limit));
  }

  /** Sends a FAILED row again from its first attempt; its key flows once it goes. */
  public boolean retry(long id) {
    return tx.inTransaction(c -> rows.retry(c, id, clock.instant()));
  }

  /** Sends every FAILED row the filter matches again, each from its first attempt; how many. */
  public int retryAll(FailedFilter filter) {
    return tx.inTransaction(c -> rows.retryAll(c, filter, clock.instant()));
  }

  /** Gives up on every FAILED row the filter matches; later rows of their keys flow. How many. */
  public int discardAll(FailedFilter filter) {
    return tx.inTransaction(c -> rows.discardAll(c, filter, clock.instant()));
  }

  /**
   * The automatic re-drive (see {@code postbox.outbox.redrive.delay}): FAILED rows that failed at
   * least {@code delay} ago and were re-driven fewer than {@code maxTimes} times are sent again.
   * Returns how many.
   */
  public int redrive(java.time.Duration delay, int maxTimes) {
    java.time.Instant now = clock.instant();
    return tx.inTransaction(c -> rows.redrive(c, now.minus(delay), maxTimes, now));
  }

  /** The database's clock, in which lease times are written and compared. */
  public java.time.Instant databaseNow() {
    return tx.inTransaction(c -> outbox.dialect().databaseNow(c));
  }

  /** Every partition's lease, by partition. */
  public List<Lease> leases() {
    return tx.inTransaction(c -> new LeaseRepository(outbox.dialect()).all(c));
  }

  /**
   * Gives up on a FAILED row, or on a PENDING one that keeps failing (attempts above 0); later rows
   * of its key flow again.
   */
  public boolean discard(long id) {
    return tx.inTransaction(c -> rows.discard(c, id, clock.instant()));
  }

  /** Scheduled events the filter matches, in id order after {@code afterId}. */
  public List<dev.postbox.runtime.api.ScheduledRow> scheduled(
      dev.postbox.runtime.api.ScheduledFilter filter, long afterId, int limit) {
    return tx.inTransaction(c -> scheduledRows().list(c, filter, afterId, limit));
  }

  /** Cancels a scheduled event; false when it is not scheduled. */
  public boolean cancelScheduled(String eventId) {
    return tx.inTransaction(c -> scheduledRows().cancel(c, eventId, clock.instant()));
  }

  /** Cancels every scheduled event the filter matches; how many. */
  public int cancelAllScheduled(dev.postbox.runtime.api.ScheduledFilter filter) {
    return tx.inTransaction(c -> scheduledRows().cancelAll(c, filter, clock.instant()));
  }

  private dev.postbox.runtime.outbox.ScheduledRepository scheduledRows() {
    return new dev.postbox.runtime.outbox.ScheduledRepository(outbox.dialect());
  }
}
