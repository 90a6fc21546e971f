package dev.postbox.runtime.inbox;

import dev.postbox.runtime.api.DeadLetter;
import dev.postbox.runtime.api.DeadLetterReason;
import dev.postbox.runtime.db.Dialect;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The sequenced mode's holds, in parameterised JDBC on the caller's connection: which open letter
 * holds a key back, which parked letters nothing holds any more, and the letter an event id already
 * is.
 */
final class LetterHoldRepository {

  private static final String PARKED_FAILED =
      "UPDATE postbox_dead_letter SET reason = ?, error = ?, error_class = ?,"
          + " attempts = attempts + 1, last_redrive_at = ? WHERE id = ? AND status = 'OPEN'"
          + " AND reason = 'PARKED'";

  private final Dialect dialect;
  private final DeadLetterRepository letters;

  LetterHoldRepository(Dialect dialect) {
    this.dialect = dialect;
    this.letters = new DeadLetterRepository(dialect);
  }

  /** The letters that hold a key back: open, of the key, any reason but CONFLICT and EXPIRED. */
  private static final String HOLDING =
      "status = 'OPEN' AND subscription = ? AND event_key = ? AND reason NOT IN ('CONFLICT', 'EXPIRED')";

  /**
   * Of these keys, those with an open letter that holds them back, each with its oldest such
   * letter's id.
   */
  Map<String, Long> openLetterKeys(Connection c, String subscription, Set<String> keys)
      throws SQLException {
    Map<String, Long> out = new HashMap<>();
    if (keys.isEmpty()) {
      return out;
    }
    List<String> all = new ArrayList<>(keys);
    for (int from = 0; from < all.size(); from += 500) {
      List<String> chunk = all.subList(from, Math.min(all.size(), from + 500));
      try (PreparedStatement ps =
          c.prepareStatement(
              "SELECT event_key, MIN(id) FROM postbox_dead_letter WHERE status = 'OPEN'"
                  + " AND subscription = ? AND reason NOT IN ('CONFLICT', 'EXPIRED') AND event_key IN ("
                  + String.join(", ", java.util.Collections.nCopies(chunk.size(), "?"))
                  + ") GROUP BY event_key")) {
        int i = 1;
        ps.setString(i++, subscription);
        for (String k : chunk) {
          ps.setString(i++, k);
        }
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            out.put(rs.getString(1), rs.getLong(2));
          }
        }
      }
    }
    return out;
  }

  /** The oldest letter that holds a key back, if any, before {@code beforeId} (0: any). */
  Optional<DeadLetter> firstHolding(Connection c, String subscription, String key, long beforeId)
      throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT "
                + DeadLetterRepository.LISTED
                + " FROM postbox_dead_letter WHERE "
                + HOLDING
                + (beforeId > 0 ? " AND id < ?" : "")
                + " ORDER BY id "
                + dialect.limit())) {
      int i = 1;
      ps.setString(i++, subscription);
      ps.setString(i++, key);
      if (beforeId > 0) {
        ps.setLong(i++, beforeId);
      }
      ps.setInt(i, 1);
      return letters.read(ps).stream().findFirst();
    }
  }

  /** Keys whose oldest holding letter is PARKED: nothing holds them back any more. */
  List<String> releasableKeys(Connection c, String subscription, int limit) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT p.event_key FROM postbox_dead_letter p WHERE p.status = 'OPEN'"
                + " AND p.subscription = ? AND p.reason = 'PARKED' AND NOT EXISTS (SELECT 1 FROM"
                + " postbox_dead_letter b WHERE b.status = 'OPEN' AND b.subscription ="
                + " p.subscription AND b.event_key = p.event_key AND b.reason NOT IN ('CONFLICT', 'EXPIRED')"
                + " AND b.id < p.id) ORDER BY p.id "
                + dialect.limit())) {
      ps.setString(1, subscription);
      ps.setInt(2, limit);
      List<String> keys = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          keys.add(rs.getString(1));
        }
      }
      return keys;
    }
  }

  /**
   * A parked letter's replay failed: it becomes a HANDLER_FAILED letter with that error, which
   * holds its key until an operator settles it (the sweep no longer picks it up).
   */
  int parkedFailed(Connection c, long id, DeadLetterReason reason, String error, Instant now)
      throws SQLException {
    String stored = DeadLetterFields.storable(error, 4000);
    try (PreparedStatement ps = c.prepareStatement(PARKED_FAILED)) {
      ps.setString(1, reason.name());
      ps.setString(2, stored);
      ps.setString(3, DeadLetterFields.errorClass(stored));
      dialect.bind(ps, 4, now);
      ps.setLong(5, id);
      return ps.executeUpdate();
    }
  }

  /**
   * The id and payload of the oldest open letter of an event id that holds its key (any reason but
   * CONFLICT), if any: sequenced mode's check that a delivery is a copy of a dead-lettered event.
   */
  Optional<Map.Entry<Long, byte[]>> openLetterOf(Connection c, String subscription, String eventId)
      throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT id, payload FROM postbox_dead_letter WHERE status = 'OPEN' AND subscription = ?"
                + " AND event_id = ? AND reason NOT IN ('CONFLICT', 'EXPIRED') ORDER BY id "
                + dialect.limit())) {
      ps.setString(1, subscription);
      ps.setString(2, eventId);
      ps.setInt(3, 1);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Optional.of(Map.entry(rs.getLong(1), rs.getBytes(2))) : Optional.empty();
      }
    }
  }
}
