package dev.postbox.runtime.inbox;

import dev.postbox.runtime.api.DeadLetter;
import dev.postbox.runtime.api.DeadLetterReason;
import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.StringMapJson;
import dev.postbox.spi.Envelope;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The dead-letter table, in parameterised JDBC on the caller's connection: storing letters, the
 * operator's listings and groups, the replay's settlement, and the sequenced mode's holds (which
 * open letter holds a key back, which parked ones may go). (Over 400 lines, as a repository of one
 * table may be: one method per statement.)
 */
final class DeadLetterRepository {

  private static final String OPEN_COUNT =
      "SELECT COUNT(*) FROM postbox_dead_letter WHERE status = 'OPEN' AND subscription = ?";

  private static final String OPEN_LETTER_COUNTS =
      "SELECT subscription, CASE WHEN reason = 'PARKED' THEN 1 ELSE 0 END, COUNT(*),"
          + " COUNT(DISTINCT event_key) FROM postbox_dead_letter WHERE status = 'OPEN'"
          + " GROUP BY subscription, CASE WHEN reason = 'PARKED' THEN 1 ELSE 0 END";

  private static final String CONFLICTED =
      "UPDATE postbox_dead_letter SET reason = 'CONFLICT', error = ?, error_class = ?,"
          + " last_redrive_at = ? WHERE id = ? AND status = 'OPEN'";

  private static final String REDRIVE_FAILED =
      "UPDATE postbox_dead_letter SET redrives = redrives + 1, last_redrive_at = ? WHERE id = ?";

  private static final String SETTLE_DEAD_LETTER =
      "UPDATE postbox_dead_letter SET status = ?, settled_at = ? WHERE id = ? AND status = 'OPEN'";

  private final Dialect dialect;

  DeadLetterRepository(Dialect dialect) {
    this.dialect = dialect;
  }

  /** Stores a dead letter, as drafted; returns its id. */
  long deadLetter(Connection c, String subscription, LetterDraft d, Instant now)
      throws SQLException {
    return deadLetter(
        c,
        subscription,
        d.event(),
        d.reason(),
        d.why(),
        d.attempts(),
        d.headers(),
        d.payload(),
        d.metadata(),
        now);
  }

  /** Stores a dead letter; the envelope is null when the message was not a valid event. */
  private long deadLetter(
      Connection c,
      String subscription,
      Envelope e,
      DeadLetterReason reason,
      String error,
      int attempts,
      Map<String, String> rawHeaders,
      byte[] rawPayload,
      Map<String, String> metadata,
      Instant now)
      throws SQLException {
    DeadLetterFields f =
        DeadLetterFields.of(
            e,
            error,
            rawHeaders,
            rawPayload,
            metadata,
            e == null || reason == DeadLetterReason.OVERSIZED);
    try (PreparedStatement ps =
        c.prepareStatement(
            "INSERT INTO postbox_dead_letter (subscription, event_id, event_key, event_type, source, subject,"
                + " content_type, event_time, reason, error, attempts, headers, payload, metadata, status, created_at,"
                + " error_class) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'OPEN', ?, ?)",
            new String[] {"id"})) {
      ps.setString(1, subscription);
      ps.setString(2, f.eventId());
      ps.setString(3, f.key());
      ps.setString(4, f.type());
      ps.setString(5, f.source());
      ps.setString(6, f.subject());
      ps.setString(7, f.contentType());
      dialect.bind(ps, 8, f.eventTime());
      ps.setString(9, reason.name());
      ps.setString(10, f.error());
      ps.setInt(11, attempts);
      ps.setString(12, StringMapJson.write(f.headers()));
      ps.setBytes(13, f.payload());
      ps.setString(14, StringMapJson.write(f.metadata()));
      dialect.bind(ps, 15, now);
      ps.setString(16, DeadLetterFields.errorClass(f.error()));
      ps.executeUpdate();
      try (ResultSet keys = ps.getGeneratedKeys()) {
        return keys.next() ? keys.getLong(1) : -1;
      }
    }
  }

  /**
   * The last resort when even a sanitised letter could not be stored: subscription, reason, why,
   * and what identifies the message (the broker's metadata, the payload's size and SHA-256), no
   * event fields, headers or payload.
   */
  long deadLetterMinimal(
      Connection c,
      String subscription,
      DeadLetterReason reason,
      String error,
      int attempts,
      Map<String, String> metadata,
      Instant now)
      throws SQLException {
    return deadLetter(
        c, subscription, null, reason, error, attempts, Map.of(), new byte[0], metadata, now);
  }

  long openCount(Connection c, String subscription) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(OPEN_COUNT)) {
      ps.setString(1, subscription);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /** A letter's columns without its payload: listings can be large, and a console polls them. */
  static final String LISTED =
      "id, subscription, event_id, event_key, event_type, source, subject, content_type,"
          + " event_time, reason, error, attempts, headers, NULL AS payload, metadata, status,"
          + " created_at, redrives";

  List<DeadLetter> deadLetters(Connection c, String subscription, int limit) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT "
                + LISTED
                + " FROM postbox_dead_letter WHERE status = 'OPEN' AND subscription = ? ORDER BY id "
                + dialect.limit())) {
      ps.setString(1, subscription);
      ps.setInt(2, limit);
      return read(ps);
    }
  }

  Optional<DeadLetter> deadLetter(Connection c, long id, boolean lock) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT * FROM postbox_dead_letter WHERE id = ?" + (lock ? " FOR UPDATE" : ""))) {
      ps.setLong(1, id);
      return read(ps).stream().findFirst();
    }
  }

  /**
   * Ids of open dead letters of a subscription after {@code afterId}, oldest first: all of them, or
   * of one type ({@code type} non-null), or only those due for an automatic re-drive ({@code
   * redriveDueBefore} non-null: HANDLER_FAILED, re-driven fewer than {@code maxRedrives} times,
   * last touched before that instant).
   */
  List<Long> openIds(
      Connection c,
      String subscription,
      String type,
      Instant redriveDueBefore,
      int maxRedrives,
      long afterId,
      int limit)
      throws SQLException {
    StringBuilder sql =
        new StringBuilder(
            "SELECT id FROM postbox_dead_letter WHERE status = 'OPEN' AND subscription = ? AND id > ?"
                + " AND event_id IS NOT NULL AND reason <> 'CONFLICT'");
    if (type != null) {
      sql.append(" AND event_type = ?");
    }
    if (redriveDueBefore != null) {
      sql.append(
          " AND reason = 'HANDLER_FAILED' AND redrives < ?"
              + " AND COALESCE(last_redrive_at, created_at) <= ?");
    }
    sql.append(" ORDER BY id ").append(dialect.limit());
    try (PreparedStatement ps = c.prepareStatement(sql.toString())) {
      int i = 1;
      ps.setString(i++, subscription);
      ps.setLong(i++, afterId);
      if (type != null) {
        ps.setString(i++, type);
      }
      if (redriveDueBefore != null) {
        ps.setInt(i++, maxRedrives);
        dialect.bind(ps, i++, redriveDueBefore);
      }
      ps.setInt(i, limit);
      List<Long> ids = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          ids.add(rs.getLong(1));
        }
      }
      return ids;
    }
  }

  /**
   * Per subscription with any: its open letters (every reason but PARKED), its PARKED letters, and
   * the keys of those. One grouped read of the open letters' index.
   */
  Map<String, InboxHealth.OpenLetters> openLetterCounts(Connection c) throws SQLException {
    Map<String, long[]> counts = new java.util.TreeMap<>();
    try (PreparedStatement ps = c.prepareStatement(OPEN_LETTER_COUNTS);
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        long[] n = counts.computeIfAbsent(rs.getString(1), s -> new long[3]);
        if (rs.getInt(2) == 1) {
          n[1] = rs.getLong(3);
          n[2] = rs.getLong(4);
        } else {
          n[0] = rs.getLong(3);
        }
      }
    }
    Map<String, InboxHealth.OpenLetters> out = new java.util.LinkedHashMap<>();
    counts.forEach((s, n) -> out.put(s, new InboxHealth.OpenLetters(n[0], n[1], n[2])));
    return java.util.Collections.unmodifiableMap(out);
  }

  /**
   * An open letter whose event turned out to be processed under its id with another payload: it
   * becomes a CONFLICT letter (it holds no key; a replay needs {@code force}).
   */
  int conflicted(Connection c, long id, String error, Instant now) throws SQLException {
    String stored = DeadLetterFields.storable(error, 4000);
    try (PreparedStatement ps = c.prepareStatement(CONFLICTED)) {
      ps.setString(1, stored);
      ps.setString(2, DeadLetterFields.errorClass(stored));
      dialect.bind(ps, 3, now);
      ps.setLong(4, id);
      return ps.executeUpdate();
    }
  }

  /** An automatic re-drive failed again: count it, and restart the letter's delay. */
  void redriveFailed(Connection c, long id, Instant now) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(REDRIVE_FAILED)) {
      dialect.bind(ps, 1, now);
      ps.setLong(2, id);
      ps.executeUpdate();
    }
  }

  /** OPEN → REPLAYED or DISCARDED; false if it was not OPEN. */
  boolean settleDeadLetter(Connection c, long id, String status, Instant now) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(SETTLE_DEAD_LETTER)) {
      ps.setString(1, status);
      dialect.bind(ps, 2, now);
      ps.setLong(3, id);
      return ps.executeUpdate() == 1;
    }
  }

  List<DeadLetter> read(PreparedStatement ps) throws SQLException {
    List<DeadLetter> out = new ArrayList<>();
    try (ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        out.add(
            new DeadLetter(
                rs.getLong("id"),
                rs.getString("subscription"),
                rs.getString("event_id"),
                rs.getString("event_key"),
                rs.getString("event_type"),
                rs.getString("source"),
                rs.getString("subject"),
                rs.getString("content_type"),
                dialect.read(rs, "event_time"),
                DeadLetterReason.valueOf(rs.getString("reason")),
                rs.getString("error"),
                rs.getInt("attempts"),
                StringMapJson.read(rs.getString("headers")),
                rs.getBytes("payload"),
                StringMapJson.read(rs.getString("metadata")),
                rs.getString("status"),
                dialect.read(rs, "created_at"),
                rs.getInt("redrives")));
      }
    }
    return out;
  }
}
