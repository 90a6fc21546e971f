package dev.postbox.runtime.outbox;

import dev.postbox.runtime.api.FailedFilter;
import dev.postbox.runtime.api.FailedRow;
import dev.postbox.runtime.api.Lag;
import dev.postbox.runtime.db.Dialect;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * The operator's view of the outbox table, in parameterised JDBC on the caller's connection: FAILED
 * rows listed, retried and discarded (one, or a filtered set), the automatic re-drive, and the lag.
 */
public final class FailedRowRepository {

  private static final String REDRIVE =
      "UPDATE postbox_outbox SET status = 'PENDING', attempts = 0, next_attempt_at = ?,"
          + " redrives = redrives + 1"
          + " WHERE status = 'FAILED' AND next_attempt_at <= ? AND redrives < ?";

  private static final String RETRY =
      "UPDATE postbox_outbox SET status = 'PENDING', attempts = 0, next_attempt_at = ?, last_error = NULL"
          + " WHERE id = ? AND status = 'FAILED'";

  private static final String DISCARD =
      "UPDATE postbox_outbox SET status = 'DISCARDED', dispatched_at = ? WHERE id = ?"
          + " AND (status = 'FAILED' OR (status = 'PENDING' AND attempts > 0))";

  private final Dialect dialect;

  public FailedRowRepository(Dialect dialect) {
    this.dialect = dialect;
  }

  private static String where(FailedFilter f) {
    StringBuilder w = new StringBuilder(" WHERE status = 'FAILED'");
    if (f.destination() != null) {
      w.append(" AND destination = ?");
    }
    if (f.type() != null) {
      w.append(" AND event_type = ?");
    }
    if (f.createdFrom() != null) {
      w.append(" AND created_at >= ?");
    }
    if (f.createdBefore() != null) {
      w.append(" AND created_at < ?");
    }
    return w.toString();
  }

  private int bind(PreparedStatement ps, int first, FailedFilter f) throws SQLException {
    int i = first;
    if (f.destination() != null) {
      ps.setString(i++, f.destination());
    }
    if (f.type() != null) {
      ps.setString(i++, f.type());
    }
    if (f.createdFrom() != null) {
      dialect.bind(ps, i++, f.createdFrom());
    }
    if (f.createdBefore() != null) {
      dialect.bind(ps, i++, f.createdBefore());
    }
    return i;
  }

  /** Makes every FAILED row the filter matches pending again, due now; returns how many. */
  public int retryAll(Connection c, FailedFilter filter, Instant now) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "UPDATE postbox_outbox SET status = 'PENDING', attempts = 0, next_attempt_at = ?,"
                + " last_error = NULL"
                + where(filter))) {
      dialect.bind(ps, 1, now);
      bind(ps, 2, filter);
      return ps.executeUpdate();
    }
  }

  /** Gives up on every FAILED row the filter matches; returns how many. */
  public int discardAll(Connection c, FailedFilter filter, Instant now) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "UPDATE postbox_outbox SET status = 'DISCARDED', dispatched_at = ?" + where(filter))) {
      dialect.bind(ps, 1, now);
      bind(ps, 2, filter);
      return ps.executeUpdate();
    }
  }

  /**
   * The automatic re-drive: FAILED rows that failed at least {@code delay} ago and were re-driven
   * fewer than {@code maxTimes} times become pending again, due now, with a fresh set of attempts.
   * Returns how many.
   */
  public int redrive(Connection c, Instant failedBefore, int maxTimes, Instant now)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(REDRIVE)) {
      dialect.bind(ps, 1, now);
      dialect.bind(ps, 2, failedBefore);
      ps.setInt(3, maxTimes);
      return ps.executeUpdate();
    }
  }

  /** Makes a FAILED row pending again, due now, with its attempts reset; false if not FAILED. */
  public boolean retry(Connection c, long id, Instant now) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(RETRY)) {
      dialect.bind(ps, 1, now);
      ps.setLong(2, id);
      return ps.executeUpdate() == 1;
    }
  }

  /** Gives up on a FAILED row; its key flows again. False if it was not FAILED. */
  public boolean discard(Connection c, long id, Instant now) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(DISCARD)) {
      dialect.bind(ps, 1, now);
      ps.setLong(2, id);
      return ps.executeUpdate() == 1;
    }
  }

  /** FAILED rows, oldest first, at most {@code limit}. */
  public List<FailedRow> failed(Connection c, int limit) throws SQLException {
    List<FailedRow> out = new ArrayList<>();
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT id, event_id, destination, event_key, event_type, attempts, last_error, created_at"
                + " FROM postbox_outbox WHERE status = 'FAILED' ORDER BY id "
                + dialect.limit())) {
      ps.setInt(1, limit);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(
              new FailedRow(
                  rs.getLong("id"),
                  rs.getString("event_id"),
                  rs.getString("destination"),
                  rs.getString("event_key"),
                  rs.getString("event_type"),
                  rs.getInt("attempts"),
                  rs.getString("last_error"),
                  dialect.read(rs, "created_at")));
        }
      }
    }
    return out;
  }

  /** Counts and the oldest undispatched row, for the lag metrics. */
  public Lag lag(Connection c) throws SQLException {
    return lag(c, true, Instant.now());
  }

  /**
   * As {@link #lag(Connection)}, at {@code now} (the database's clock); the scheduled rows' count
   * is -1 unless {@code countScheduled} (their next due time is always read, from an index's end):
   * counting a million scheduled rows takes PostgreSQL about 0.2 s, too much for a reading every
   * two seconds (docs/benchmarks.md, "Scheduled events"). Scheduled rows already due wait for the
   * relay: they count as pending, aged from their due time.
   */
  public Lag lag(Connection c, boolean countScheduled, Instant now) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            // One branch per status, so each can read its own (partial) index; now is bound (a
            // volatile function such as clock_timestamp() would bound no index range).
            "SELECT 'PENDING' AS status, COUNT(*) AS n, MIN(created_at) AS oldest"
                + " FROM postbox_outbox WHERE status = 'PENDING'"
                + " UNION ALL SELECT 'FAILED' AS status, COUNT(*) AS n, MIN(created_at) AS oldest"
                + " FROM postbox_outbox WHERE status = 'FAILED'"
                + " UNION ALL SELECT 'OVERDUE' AS status, COUNT(*) AS n,"
                + " MIN(next_attempt_at) AS oldest FROM postbox_outbox WHERE status IN "
                + OutboxRepository.SCHEDULED_STATUSES
                + " AND next_attempt_at <= ?"
                + " UNION ALL SELECT 'SCHEDULED' AS status, "
                + (countScheduled ? "COUNT(*)" : "-1")
                + " AS n, MIN(next_attempt_at) AS oldest FROM postbox_outbox WHERE status IN "
                + OutboxRepository.SCHEDULED_STATUSES
                + " AND next_attempt_at > ?")) {
      dialect.bind(ps, 1, now);
      dialect.bind(ps, 2, now);
      return readLag(ps);
    }
  }

  private Lag readLag(PreparedStatement ps) throws SQLException {
    try (ResultSet rs = ps.executeQuery()) {
      long pending = 0;
      long failed = 0;
      long scheduled = 0;
      Instant oldest = null;
      Instant nextDue = null;
      long overdue = 0;
      Instant oldestOverdue = null;
      while (rs.next()) {
        String status = rs.getString("status");
        long n = rs.getLong("n");
        Instant min = dialect.read(rs, "oldest");
        if (OutboxRepository.PENDING.equals(status)) {
          pending = n;
          oldest = min; // FAILED rows wait for an operator; they are counted, not aged
        } else if (OutboxRepository.FAILED.equals(status)) {
          failed = n;
        } else if ("OVERDUE".equals(status)) {
          overdue = n;
          oldestOverdue = min;
        } else {
          scheduled = n;
          nextDue = min;
        }
      }
      if (oldestOverdue != null && (oldest == null || oldestOverdue.isBefore(oldest))) {
        oldest = oldestOverdue;
      }
      return new Lag(pending + overdue, failed, oldest, scheduled, nextDue);
    }
  }
}
