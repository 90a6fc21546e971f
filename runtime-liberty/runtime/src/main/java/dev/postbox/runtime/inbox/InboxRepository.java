package dev.postbox.runtime.inbox;

import dev.postbox.runtime.api.DeadLetter;
import dev.postbox.runtime.api.DeadLetterGroup;
import dev.postbox.runtime.api.DeadLetterReason;
import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.StringMapJson;
import dev.postbox.runtime.retention.DatePartitions;
import dev.postbox.spi.Envelope;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The inbox, attempt and dead-letter tables, in parameterised JDBC on the caller's connection.
 * (Long, as a repository is: one method per statement on three tables.)
 */
final class InboxRepository {

  /** Rows per multi-row insert: well under MariaDB's 65,535 placeholders per statement. */
  private static final int RETURNING_CHUNK = 1_000;

  private final Dialect dialect;
  private final String recordSql;
  private final String attemptSql;
  private final String countDuplicatesSql;

  /** Whether the inbox is date-partitioned; looked up at the first recording. */
  private volatile Boolean datePartitioned;

  InboxRepository(Dialect dialect) {
    this.dialect = dialect;
    this.recordSql = dialect.insertInboxIfAbsent();
    this.countDuplicatesSql = dialect.addInboxDuplicates();
    this.attemptSql = dialect.upsertInboxAttempt();
  }

  /** Adds to the subscription's durable duplicate count, in the caller's transaction. */
  void countDuplicates(Connection c, String subscription, long n) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(countDuplicatesSql)) {
      ps.setString(1, subscription);
      ps.setLong(2, n);
      ps.executeUpdate();
    }
  }

  /** Duplicates rejected for a subscription since its first delivery; 0 if none. */
  long duplicatesCounted(Connection c, String subscription) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement("SELECT duplicates FROM postbox_inbox_counter WHERE subscription = ?")) {
      ps.setString(1, subscription);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getLong(1) : 0;
      }
    }
  }

  /**
   * Records the event as processed by this subscription, unless it already was.
   *
   * @return true if the row is new (the handler must run), false for a duplicate
   */
  boolean record(Connection c, String subscription, Envelope e, String fingerprint, Instant now)
      throws SQLException {
    if (datePartitioned(c)
        && !DatePartitions.inEarlierBuckets(c, subscription, List.of(e.id())).isEmpty()) {
      return false;
    }
    try (PreparedStatement ps = c.prepareStatement(recordSql(c))) {
      bindRecord(ps, 0, subscription, e, fingerprint, true, now);
      return ps.executeUpdate() == 1;
    }
  }

  /**
   * {@link #record} for many events in one round trip; {@code processed} false records them as
   * RECEIVED, for deferred mode. An id that occurs twice in {@code events} is new at most once.
   *
   * @return per event, whether it is new
   * @throws IllegalStateException the driver did not report per-row results (e.g. PostgreSQL's
   *     {@code reWriteBatchedInserts=true}); new and duplicate events could not be told apart
   */
  boolean[] recordAll(
      Connection c,
      String subscription,
      List<Envelope> events,
      List<String> fingerprints,
      boolean processed,
      Instant now)
      throws SQLException {
    if (events.isEmpty()) {
      return new boolean[0]; // no statement that never runs (see LeaseManager)
    }
    // Insert in event-id order, whatever the delivery order: concurrent transactions holding
    // overlapping ids then take their key locks in the same order and do not deadlock.
    Integer[] order = new Integer[events.size()];
    for (int i = 0; i < order.length; i++) {
      order[i] = i;
    }
    java.util.Arrays.sort(order, java.util.Comparator.comparing(i -> events.get(i).id()));
    if (datePartitioned(c)) {
      // The ids an earlier bucket holds are duplicates, found under the bucket lock before
      // anything is inserted; the rest go to the current bucket, whose key catches copies in it.
      Set<String> earlier =
          DatePartitions.inEarlierBuckets(
              c, subscription, events.stream().map(Envelope::id).toList());
      order =
          java.util.Arrays.stream(order)
              .filter(i -> !earlier.contains(events.get(i).id()))
              .toArray(Integer[]::new);
      if (order.length == 0) {
        return new boolean[events.size()];
      }
    }
    if (dialect.insertInboxIfAbsentReturning(1) != null) {
      return recordAllReturning(c, subscription, events, fingerprints, processed, now, order);
    }
    try (PreparedStatement ps = c.prepareStatement(recordSql(c))) {
      for (int i : order) {
        bindRecord(ps, 0, subscription, events.get(i), fingerprints.get(i), processed, now);
        ps.addBatch();
      }
      int[] counts = ps.executeBatch();
      boolean[] fresh = new boolean[events.size()];
      for (int n = 0; n < counts.length; n++) {
        if (counts[n] == java.sql.Statement.SUCCESS_NO_INFO) {
          throw noPerRowCounts();
        }
        fresh[order[n]] = counts[n] == 1;
      }
      return fresh;
    }
  }

  private String recordSql(Connection c) throws SQLException {
    return datePartitioned(c) ? dialect.insertInboxIfAbsentInBucket() : recordSql;
  }

  private boolean datePartitioned(Connection c) throws SQLException {
    Boolean known = datePartitioned;
    if (known == null) {
      known = DatePartitions.isPartitioned(c, dialect, DatePartitions.Table.INBOX);
      datePartitioned = known;
    }
    return known;
  }

  private static IllegalStateException noPerRowCounts() {
    return new IllegalStateException(
        "the JDBC driver does not report per-row insert results (PostgreSQL: turn off"
            + " reWriteBatchedInserts); the inbox cannot tell new events from duplicates");
  }

  /**
   * Where the driver cannot count a batch's rows one by one (MariaDB's sends it as one bulk command
   * and answers "no info" per row), one multi-row insert per chunk returns the ids it inserted.
   */
  private boolean[] recordAllReturning(
      Connection c,
      String subscription,
      List<Envelope> events,
      List<String> fingerprints,
      boolean processed,
      Instant now,
      Integer[] order)
      throws SQLException {
    boolean[] fresh = new boolean[events.size()];
    for (int from = 0; from < order.length; from += RETURNING_CHUNK) {
      int to = Math.min(order.length, from + RETURNING_CHUNK);
      Set<String> inserted = new HashSet<>();
      try (PreparedStatement ps =
          c.prepareStatement(dialect.insertInboxIfAbsentReturning(to - from))) {
        for (int n = from; n < to; n++) {
          int i = order[n];
          bindRecord(
              ps, (n - from) * 8, subscription, events.get(i), fingerprints.get(i), processed, now);
        }
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            inserted.add(rs.getString(1));
          }
        }
      }
      for (int n = from; n < to; n++) {
        // remove: of two deliveries of one id in this statement, only the first is new
        fresh[order[n]] = inserted.remove(events.get(order[n]).id());
      }
    }
    return fresh;
  }

  /**
   * Binds a PROCESSED row (inline mode, replays) or a RECEIVED one waiting for a deferred worker:
   * the eight values of {@link Dialect#INBOX_COLUMNS}, from parameter {@code offset + 1} on.
   */
  private void bindRecord(
      PreparedStatement ps,
      int offset,
      String subscription,
      Envelope e,
      String fingerprint,
      boolean processed,
      Instant now)
      throws SQLException {
    ps.setString(offset + 1, subscription);
    ps.setString(offset + 2, e.id());
    ps.setString(offset + 3, e.key());
    ps.setString(offset + 4, e.type());
    ps.setString(offset + 5, fingerprint);
    ps.setString(offset + 6, processed ? "PROCESSED" : "RECEIVED");
    dialect.bind(ps, offset + 7, now);
    dialect.bind(ps, offset + 8, processed ? now : null);
  }

  /** The fingerprint recorded for an event, if any. */
  Optional<String> fingerprint(Connection c, String subscription, String eventId)
      throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT fingerprint FROM postbox_inbox WHERE subscription = ? AND event_id = ?")) {
      ps.setString(1, subscription);
      ps.setString(2, eventId);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Optional.of(rs.getString(1)) : Optional.empty();
      }
    }
  }

  /** Failed attempts recorded so far for a delivery; 0 if none. */
  int failedAttempts(Connection c, String subscription, String eventId) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT attempts FROM postbox_inbox_attempt WHERE subscription = ? AND event_id = ?")) {
      ps.setString(1, subscription);
      ps.setString(2, eventId);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getInt(1) : 0;
      }
    }
  }

  void recordFailure(
      Connection c, String subscription, String eventId, int attempts, String error, Instant now)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(attemptSql)) {
      ps.setString(1, subscription);
      ps.setString(2, eventId);
      ps.setInt(3, attempts);
      ps.setString(4, DeadLetterFields.storable(error, 4000));
      dialect.bind(ps, 5, now);
      ps.executeUpdate();
    }
  }

  void clearAttempts(Connection c, String subscription, String eventId) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "DELETE FROM postbox_inbox_attempt WHERE subscription = ? AND event_id = ?")) {
      ps.setString(1, subscription);
      ps.setString(2, eventId);
      ps.executeUpdate();
    }
  }

  /** Stores a dead letter; the envelope is null when the message was not a valid event. */
  long deadLetter(
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
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT COUNT(*) FROM postbox_dead_letter WHERE status = 'OPEN' AND subscription = ?")) {
      ps.setString(1, subscription);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /** A letter's columns without its payload: listings can be large, and a console polls them. */
  private static final String LISTED =
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

  /** A subscription's open letters grouped by reason and error class, the largest group first. */
  List<DeadLetterGroup> openGroups(Connection c, String subscription) throws SQLException {
    List<DeadLetterGroup> groups = new ArrayList<>();
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT reason, error_class, COUNT(*), MIN(id), MAX(id), MIN(created_at) AS oldest,"
                + " MAX(created_at) AS newest FROM postbox_dead_letter WHERE status = 'OPEN' AND subscription = ?"
                + " GROUP BY reason, error_class ORDER BY COUNT(*) DESC, MIN(id)")) {
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
    try (PreparedStatement ps =
        c.prepareStatement("SELECT error FROM postbox_dead_letter WHERE id = ?")) {
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

  /** The letters that hold a key back: open, of the key, any reason but CONFLICT. */
  private static final String HOLDING =
      "status = 'OPEN' AND subscription = ? AND event_key = ? AND reason <> 'CONFLICT'";

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
                  + " AND subscription = ? AND reason <> 'CONFLICT' AND event_key IN ("
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
                + LISTED
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
      return read(ps).stream().findFirst();
    }
  }

  /** Keys whose oldest holding letter is PARKED: nothing holds them back any more. */
  List<String> releasableKeys(Connection c, String subscription, int limit) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT p.event_key FROM postbox_dead_letter p WHERE p.status = 'OPEN'"
                + " AND p.subscription = ? AND p.reason = 'PARKED' AND NOT EXISTS (SELECT 1 FROM"
                + " postbox_dead_letter b WHERE b.status = 'OPEN' AND b.subscription ="
                + " p.subscription AND b.event_key = p.event_key AND b.reason <> 'CONFLICT'"
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
    try (PreparedStatement ps =
        c.prepareStatement(
            "UPDATE postbox_dead_letter SET reason = ?, error = ?, error_class = ?,"
                + " attempts = attempts + 1, last_redrive_at = ? WHERE id = ? AND status = 'OPEN'"
                + " AND reason = 'PARKED'")) {
      ps.setString(1, reason.name());
      ps.setString(2, stored);
      ps.setString(3, DeadLetterFields.errorClass(stored));
      dialect.bind(ps, 4, now);
      ps.setLong(5, id);
      return ps.executeUpdate();
    }
  }

  /**
   * Per subscription with any: its open letters (every reason but PARKED), its PARKED letters, and
   * the keys of those. One grouped read of the open letters' index.
   */
  Map<String, InboxHealth.OpenLetters> openLetterCounts(Connection c) throws SQLException {
    Map<String, long[]> counts = new java.util.TreeMap<>();
    try (PreparedStatement ps =
            c.prepareStatement(
                "SELECT subscription, CASE WHEN reason = 'PARKED' THEN 1 ELSE 0 END, COUNT(*),"
                    + " COUNT(DISTINCT event_key) FROM postbox_dead_letter WHERE status = 'OPEN'"
                    + " GROUP BY subscription, CASE WHEN reason = 'PARKED' THEN 1 ELSE 0 END");
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
    try (PreparedStatement ps =
        c.prepareStatement(
            "UPDATE postbox_dead_letter SET reason = 'CONFLICT', error = ?, error_class = ?,"
                + " last_redrive_at = ? WHERE id = ? AND status = 'OPEN'")) {
      ps.setString(1, stored);
      ps.setString(2, DeadLetterFields.errorClass(stored));
      dialect.bind(ps, 3, now);
      ps.setLong(4, id);
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
                + " AND event_id = ? AND reason <> 'CONFLICT' ORDER BY id "
                + dialect.limit())) {
      ps.setString(1, subscription);
      ps.setString(2, eventId);
      ps.setInt(3, 1);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Optional.of(Map.entry(rs.getLong(1), rs.getBytes(2))) : Optional.empty();
      }
    }
  }

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

  /** An automatic re-drive failed again: count it, and restart the letter's delay. */
  void redriveFailed(Connection c, long id, Instant now) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "UPDATE postbox_dead_letter SET redrives = redrives + 1, last_redrive_at = ? WHERE id = ?")) {
      dialect.bind(ps, 1, now);
      ps.setLong(2, id);
      ps.executeUpdate();
    }
  }

  /** OPEN → REPLAYED or DISCARDED; false if it was not OPEN. */
  boolean settleDeadLetter(Connection c, long id, String status, Instant now) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "UPDATE postbox_dead_letter SET status = ?, settled_at = ? WHERE id = ? AND status = 'OPEN'")) {
      ps.setString(1, status);
      dialect.bind(ps, 2, now);
      ps.setLong(3, id);
      return ps.executeUpdate() == 1;
    }
  }

  private List<DeadLetter> read(PreparedStatement ps) throws SQLException {
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
