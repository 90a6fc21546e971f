package dev.postbox.runtime.testing;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;

/** A clock a test moves by hand: time-based work (buckets, retention) without waiting. */
public final class ManualClock extends Clock {

  private volatile Instant now;

  public ManualClock(Instant start) {
    this.now = start;
  }

  /** Moves the clock forward. */
  public void advance(Duration d) {
    now = now.plus(d);
  }

  /**
   * Opens the date-partitioned tables' current buckets at this clock's now (the conversion opens
   * them at the database's), so that moving the clock by an interval moves the buckets.
   */
  public void openDateBuckets(
      dev.postbox.runtime.db.Transactions tx, dev.postbox.runtime.db.Dialect dialect) {
    tx.inTransaction(
        c -> {
          try (java.sql.PreparedStatement ps =
              c.prepareStatement("UPDATE postbox_bucket SET opened_at = ?")) {
            dialect.bind(ps, 1, now);
            return ps.executeUpdate();
          }
        });
  }

  @Override
  public Instant instant() {
    return now;
  }

  @Override
  public ZoneId getZone() {
    return ZoneOffset.UTC;
  }

  @Override
  public Clock withZone(ZoneId zone) {
    return this;
  }
}
