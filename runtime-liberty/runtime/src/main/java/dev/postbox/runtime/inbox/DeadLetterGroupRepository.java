package dev.postbox.runtime.inbox;

import dev.postbox.runtime.api.DeadLetterGroup;
import dev.postbox.runtime.api.DeadLetterReason;
import dev.postbox.runtime.db.Dialect;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The operator's groups of open dead letters (by reason and error class) and what is done to a
 * group at once, in parameterised JDBC on the caller's connection.
 */
final class DeadLetterGroupRepository {

  private static final String OPEN_GROUPS =
      "SELECT reason, error_class, COUNT(*), MIN(id), MAX(id), MIN(created_at) AS oldest,"
          + " MAX(created_at) AS newest FROM postbox_dead_letter WHERE status = 'OPEN' AND subscription = ?"
          + " GROUP BY reason, error_class ORDER BY COUNT(*) DESC, MIN(id)";

  private static final String ERROR_OF = "SELECT error FROM postbox_dead_letter WHERE id = ?";

  private final Dialect dialect;

  DeadLetterGroupRepository(Dialect dialect) {
    this.dialect = dialect;
  }

  /** A subscription's open letters grouped by reason and error class, the largest group first. */
  List<DeadLetterGroup> openGroups(Connection c, String subscription) throws SQLException {
    List<DeadLetterGroup> groups = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(OPEN_GROUPS)) {
      ps.setString(1, subscription);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          groups.add(
              new DeadLetterGroup(
                  subscription,
                  DeadLetterReason.valueOf(rs.getString(1)),
                  rs.getString(2),
                  rs.getLong(3),
                  rs.getLong(4),
                  rs.getLong(5),
                  dialect.read(rs, "oldest"),
                  dialect.read(rs, "newest"),
                  null));
        }
      }
    }
    List<DeadLetterGroup> out = new ArrayList<>();
    for (DeadLetterGroup g : groups) {
      out.add(
          new DeadLetterGroup(
              g.subscription(),
              g.reason(),
              g.errorClass(),
              g.count(),
              g.firstId(),
              g.lastId(),
              g.oldest(),
              g.newest(),
              errorOf(c, g.lastId())));
    }
    return out;
  }

  private String errorOf(Connection c, long id) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(ERROR_OF)) {
      ps.setLong(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getString(1) : null;
      }
    }
  }

  /**
   * Ids of a group's open letters that hold an event, after {@code afterId} and up to {@code
   * throughId} (0: no bound), oldest first.
   */
  List<Long> openIdsInGroup(
      Connection c,
      String subscription,
      DeadLetterReason reason,
      String errorClass,
      long throughId,
      long afterId,
      int limit)
      throws SQLException {
    List<Object> args = new ArrayList<>();
    String where = groupWhere(subscription, reason, errorClass, throughId, args);
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT id FROM postbox_dead_letter WHERE "
                + where
                + " AND event_id IS NOT NULL AND id > ? ORDER BY id "
                + dialect.limit())) {
      int i = bind(ps, args);
      ps.setLong(i++, afterId);
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

  /** OPEN → DISCARDED for a group's letters up to {@code throughId} (0: no bound). */
  int discardGroup(
      Connection c,
      String subscription,
      DeadLetterReason reason,
      String errorClass,
      long throughId,
      Instant now)
      throws SQLException {
    List<Object> args = new ArrayList<>();
    String where = groupWhere(subscription, reason, errorClass, throughId, args);
    try (PreparedStatement ps =
        c.prepareStatement(
            "UPDATE postbox_dead_letter SET status = 'DISCARDED', settled_at = ? WHERE " + where)) {
      dialect.bind(ps, 1, now);
      bind(ps, args, 2);
      return ps.executeUpdate();
    }
  }

  private static String groupWhere(
      String subscription,
      DeadLetterReason reason,
      String errorClass,
      long throughId,
      List<Object> args) {
    StringBuilder where =
        new StringBuilder("status = 'OPEN' AND subscription = ? AND reason = ? AND ");
    args.add(subscription);
    args.add(reason.name());
    if (errorClass == null) {
      where.append("error_class IS NULL");
    } else {
      where.append("error_class = ?");
      args.add(errorClass);
    }
    if (throughId > 0) {
      where.append(" AND id <= ?");
      args.add(throughId);
    }
    return where.toString();
  }

  private static int bind(PreparedStatement ps, List<Object> args) throws SQLException {
    return bind(ps, args, 1);
  }

  /** Binds strings and longs from {@code first} on; returns the next index. */
  private static int bind(PreparedStatement ps, List<Object> args, int first) throws SQLException {
    int i = first;
    for (Object a : args) {
      if (a instanceof Long l) {
        ps.setLong(i++, l);
      } else {
        ps.setString(i++, (String) a);
      }
    }
    return i;
  }

  // ---- sequenced mode: a key's open letters hold its later events back ----

  /** The keys of a group's open letters (up to {@code throughId}; 0: all). */
  Set<String> groupKeys(
      Connection c, String subscription, DeadLetterReason reason, String errorClass, long throughId)
      throws SQLException {
    List<Object> args = new ArrayList<>();
    String where = groupWhere(subscription, reason, errorClass, throughId, args);
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT DISTINCT event_key FROM postbox_dead_letter WHERE "
                + where
                + " AND event_key IS NOT NULL")) {
      bind(ps, args);
      Set<String> keys = new java.util.LinkedHashSet<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          keys.add(rs.getString(1));
        }
      }
      return keys;
    }
  }
}
