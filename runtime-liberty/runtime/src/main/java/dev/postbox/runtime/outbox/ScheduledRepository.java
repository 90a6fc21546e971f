package dev.postbox.runtime.outbox;

import dev.postbox.runtime.db.Dialect;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * The outbox's scheduled rows, in plain parameterised JDBC on the caller's connection: cancel, the
 * relay's promotion of due rows and expiry of claimed ones, and the due timer's look-ups. Rows are
 * inserted by {@link OutboxRepository#insertScheduled}.
 */
public final class ScheduledRepository {

  private static final String SCHEDULED_STATUSES = OutboxRepository.SCHEDULED_STATUSES;

  private static final String CANCEL =
      "UPDATE postbox_outbox SET status = 'CANCELLED', dispatched_at = ? WHERE event_id = ?"
          + " AND status IN "
          + SCHEDULED_STATUSES;

  private final Dialect dialect;

  public ScheduledRepository(Dialect dialect) {
    this.dialect = dialect;
  }

  /**
   * Cancels a scheduled row by event id; true when it was still scheduled. The row ends CANCELLED
   * (settled, for retention) and is never published: the relay claims only PENDING rows, and a
   * scheduled row turns PENDING only in the claim transaction of its partition's lease holder, so
   * this UPDATE and that one serialise on the row.
   */
  public boolean cancel(Connection c, String eventId, Instant now) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(CANCEL)) {
      dialect.bind(ps, 1, now);
      ps.setString(2, eventId);
      return ps.executeUpdate() > 0;
    }
  }

  /** At most this many scheduled rows turn PENDING per claim; the due timer comes back for more. */
  public static final int PROMOTE_LIMIT = 1_000;

  /**
   * Turns the partitions' scheduled rows that are due at {@code now} PENDING, at most {@link
   * #PROMOTE_LIMIT}; returns how many. Run in the claim's transaction, under the partitions'
   * leases. Rows locked by a transaction in flight (an application's cancel that has not committed
   * yet) are skipped, not waited for: the relay's claim never waits on an application's
   * transaction; the due timer looks again.
   */
  public int promoteDue(Connection c, Collection<Integer> partitionNos, Instant now)
      throws SQLException {
    if (partitionNos.isEmpty()) {
      return 0;
    }
    List<Long> ids = new java.util.ArrayList<>();
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT id FROM postbox_outbox WHERE status IN "
                + SCHEDULED_STATUSES
                + " AND next_attempt_at <= ? AND partition_no IN ("
                + OutboxRepository.placeholders(partitionNos.size())
                + ") ORDER BY id"
                + dialect.limitSkippingLocked())) {
      dialect.bind(ps, 1, now);
      int i = 2;
      for (int p : partitionNos) {
        ps.setInt(i++, p);
      }
      ps.setInt(i, PROMOTE_LIMIT);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          ids.add(rs.getLong(1));
        }
      }
    }
    if (ids.isEmpty()) {
      return 0;
    }
    try (PreparedStatement ps =
        c.prepareStatement(
            // created_at becomes the due time: the lag of a due row counts from when it fell due,
            // not from when it was recorded (event_time keeps that).
            "UPDATE postbox_outbox SET status = 'PENDING', created_at = next_attempt_at"
                + " WHERE status IN "
                + SCHEDULED_STATUSES
                + " AND id IN ("
                + OutboxRepository.placeholders(ids.size())
                + ")")) {
      int i = 1;
      for (long id : ids) {
        ps.setLong(i++, id);
      }
      return ps.executeUpdate();
    }
  }

  /** Partitions with scheduled rows due at {@code now}. */
  public Set<Integer> partitionsWithDueScheduled(Connection c, Instant now) throws SQLException {
    Set<Integer> out = new TreeSet<>();
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT DISTINCT partition_no FROM postbox_outbox WHERE status IN "
                + SCHEDULED_STATUSES
                + " AND next_attempt_at <= ?")) {
      dialect.bind(ps, 1, now);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(rs.getInt(1));
        }
      }
    }
    return out;
  }

  /** The earliest due time of a scheduled row after {@code now}, or null when none waits. */
  public Instant nextScheduledDue(Connection c, Instant now) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT MIN(next_attempt_at) AS due FROM postbox_outbox WHERE status IN "
                + SCHEDULED_STATUSES
                + " AND next_attempt_at > ?")) {
      dialect.bind(ps, 1, now);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? dialect.read(rs, "due") : null;
      }
    }
  }

  /**
   * Claimed rows past their expiry: EXPIRED, never published; one statement per 500 ids. Only
   * PENDING rows change.
   */
  public void expire(Connection c, List<Long> ids, Instant now) throws SQLException {
    for (int from = 0; from < ids.size(); from += 500) {
      List<Long> chunk = ids.subList(from, Math.min(ids.size(), from + 500));
      try (PreparedStatement ps =
          c.prepareStatement(
              "UPDATE postbox_outbox SET status = 'EXPIRED', dispatched_at = ?,"
                  + " last_error = 'expired before it was published' WHERE id IN ("
                  + OutboxRepository.placeholders(chunk.size())
                  + ") AND status = 'PENDING'")) {
        dialect.bind(ps, 1, now);
        int i = 2;
        for (long id : chunk) {
          ps.setLong(i++, id);
        }
        ps.executeUpdate();
      }
    }
  }

  private static final String ROW_COLUMNS =
      "id, event_id, destination, event_key, event_type, next_attempt_at, created_at, headers,"
          + " status";

  /**
   * Scheduled rows the filter matches, in id order after {@code afterId}, at most {@code limit}.
   */
  public List<dev.postbox.runtime.api.ScheduledRow> list(
      Connection c, dev.postbox.runtime.api.ScheduledFilter filter, long afterId, int limit)
      throws SQLException {
    List<dev.postbox.runtime.api.ScheduledRow> out = new java.util.ArrayList<>();
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT "
                + ROW_COLUMNS
                + " FROM postbox_outbox WHERE "
                + where(filter)
                + " AND id > ? ORDER BY id "
                + dialect.limit())) {
      int i = bind(ps, 1, filter);
      ps.setLong(i++, afterId);
      ps.setInt(i, limit);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          java.util.Map<String, String> headers =
              dev.postbox.runtime.db.StringMapJson.read(rs.getString("headers"));
          Instant expires;
          try {
            expires = dev.postbox.spi.Envelope.expiryTime(headers).orElse(null);
          } catch (RuntimeException unreadable) {
            expires = null; // checked when recorded; a row written otherwise shows none
          }
          out.add(
              new dev.postbox.runtime.api.ScheduledRow(
                  rs.getLong("id"),
                  rs.getString("event_id"),
                  rs.getString("destination"),
                  rs.getString("event_key"),
                  rs.getString("event_type"),
                  dialect.read(rs, "next_attempt_at"),
                  dialect.read(rs, "created_at"),
                  expires,
                  OutboxRepository.SCHEDULED_KEY.equals(rs.getString("status"))));
        }
      }
    }
    return out;
  }

  /** Cancels every scheduled row the filter matches; returns how many. */
  public int cancelAll(Connection c, dev.postbox.runtime.api.ScheduledFilter filter, Instant now)
      throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "UPDATE postbox_outbox SET status = 'CANCELLED', dispatched_at = ? WHERE "
                + where(filter))) {
      dialect.bind(ps, 1, now);
      bind(ps, 2, filter);
      return ps.executeUpdate();
    }
  }

  private static String where(dev.postbox.runtime.api.ScheduledFilter f) {
    return "status IN "
        + SCHEDULED_STATUSES
        + (f.destination() == null ? "" : " AND destination = ?")
        + (f.type() == null ? "" : " AND event_type = ?")
        + (f.dueFrom() == null ? "" : " AND next_attempt_at >= ?")
        + (f.dueBefore() == null ? "" : " AND next_attempt_at < ?");
  }

  /** Binds the filter's values from {@code i}; returns the next index. */
  private int bind(PreparedStatement ps, int i, dev.postbox.runtime.api.ScheduledFilter f)
      throws SQLException {
    if (f.destination() != null) {
      ps.setString(i++, f.destination());
    }
    if (f.type() != null) {
      ps.setString(i++, f.type());
    }
    if (f.dueFrom() != null) {
      dialect.bind(ps, i++, f.dueFrom());
    }
    if (f.dueBefore() != null) {
      dialect.bind(ps, i++, f.dueBefore());
    }
    return i;
  }
}
