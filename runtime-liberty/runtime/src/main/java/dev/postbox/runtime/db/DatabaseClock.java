package dev.postbox.runtime.db;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import javax.sql.DataSource;

/**
 * The database's clock, read without a round trip: this JVM's clock plus the offset to the
 * database's, measured at start and again every minute ({@link #refresh}). Row due times, scheduled
 * events' due times and expiries, and the relay's "now" are all this clock's, so instances whose
 * own clocks disagree still agree on when a row is due. The offset is measured to within half the
 * round trip of the best of a few samples (well under a millisecond on a local network).
 */
public final class DatabaseClock extends Clock {

  private static final System.Logger LOG = System.getLogger(DatabaseClock.class.getName());

  /** An offset beyond this is logged: the instance's clock is far off the database's. */
  static final Duration WARN_OFFSET = Duration.ofSeconds(1);

  private final Clock base;
  private final DataSource dataSource;
  private final Dialect dialect;
  private volatile long offsetNanos;

  private DatabaseClock(Clock base, DataSource dataSource, Dialect dialect) {
    this.base = base;
    this.dataSource = dataSource;
    this.dialect = dialect;
  }

  /** Measures the offset now. */
  public static DatabaseClock of(Clock base, DataSource dataSource, Dialect dialect) {
    DatabaseClock clock = new DatabaseClock(base, dataSource, dialect);
    clock.refresh();
    return clock;
  }

  /** Measures the offset again; on failure the last one stays (and the failure is logged). */
  public void refresh() {
    try (Connection c = dataSource.getConnection()) {
      long best = Long.MAX_VALUE;
      long offset = offsetNanos;
      for (int i = 0; i < 3; i++) {
        Instant before = base.instant();
        long t0 = System.nanoTime();
        Instant db = dialect.databaseNow(c);
        long rtt = System.nanoTime() - t0;
        if (rtt < best) {
          best = rtt;
          Instant mid = before.plusNanos(rtt / 2);
          offset = Duration.between(mid, db).toNanos();
        }
      }
      if (!c.getAutoCommit()) {
        c.rollback();
      }
      if (Math.abs(offset) > WARN_OFFSET.toNanos()
          && Math.abs(offset - offsetNanos) > WARN_OFFSET.toNanos()) {
        LOG.log(
            System.Logger.Level.WARNING,
            "this instance's clock is "
                + Duration.ofNanos(-offset)
                + " off the database's; Postbox uses the database's for due times and expiries");
      }
      offsetNanos = offset;
    } catch (SQLException | RuntimeException e) {
      LOG.log(
          System.Logger.Level.WARNING,
          "reading the database's clock failed; the last offset stays ("
              + offsetNanos
              + " ns): "
              + e);
    }
  }

  /** The database's clock minus this JVM's, in nanoseconds, as last measured. */
  public long offsetNanos() {
    return offsetNanos;
  }

  @Override
  public Instant instant() {
    return base.instant().plusNanos(offsetNanos);
  }

  @Override
  public ZoneId getZone() {
    return ZoneOffset.UTC;
  }

  @Override
  public Clock withZone(ZoneId zone) {
    return Clock.offset(base.withZone(zone), Duration.ofNanos(offsetNanos));
  }
}
