package dev.postbox.runtime.inbox;

import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.StringMapJson;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.InvalidEventException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The inbox's queue ({@code postbox_inbox_pending}): events that were received, recorded and
 * acknowledged, and now wait for a worker. In deferred mode every event goes through it; in inline
 * mode an event whose handler failed waits in it for its next attempt, and its key's later events
 * queue behind it, so a key's order through failures is kept in the database, not in memory or in
 * the broker's redelivery. Parameterised JDBC on the caller's connection.
 *
 * <p>Per-key order: only a key's <em>head</em> (its oldest pending event) may be claimed. When a
 * head leaves the queue, the next event of its key is promoted in the same transaction. One race
 * remains: a receiver may queue a key's next event while a worker is finishing the head, and
 * neither sees the other's uncommitted row. So whoever commits may have missed the other re-checks
 * after its commit ({@link HeadRecheck}): of the two re-checks, the later one sees both commits.
 * {@link #sweep} repairs heads lost to a crash between a commit and its re-check. The claim, head
 * promotion and sweep are kept together: each relies on the others' ordering to keep one event per
 * key in flight. (Over 400 lines: for that reason, with the queue's writes beside them.)
 */
final class PendingEventRepository {

  /** One queued event, as it was delivered. */
  record Pending(long seq, Envelope event, Map<String, String> metadata, int attempts) {}

  /**
   * A queued row an earlier version accepted that no envelope can hold now: the claim leaves it to
   * the caller to dead-letter, then to {@link #dropStale}.
   */
  record Stale(
      long seq,
      String id,
      String key,
      Map<String, String> raw,
      byte[] payload,
      Map<String, String> metadata,
      InvalidEventException why) {}

  private static final String ENQUEUE =
      "INSERT INTO postbox_inbox_pending (subscription, event_id, event_key, event_type, source,"
          + " subject, content_type, event_time, headers, payload, metadata, attempts,"
          + " next_attempt_at, head, last_error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
          + " ?)";

  /** A key's queued events, oldest first, locked: sequenced mode parks them behind a letter. */
  private static final String OF_KEY =
      "SELECT * FROM postbox_inbox_pending WHERE subscription = ? AND event_key = ? ORDER BY seq"
          + " FOR UPDATE";

  /** The keys whose events are (true) or are not (false) heads. */
  private static final String KEYS_WITH_HEAD =
      "SELECT DISTINCT event_key FROM postbox_inbox_pending WHERE subscription = ? AND head = ?"
          + " AND event_key IS NOT NULL";

  private static final String LEAVE = "DELETE FROM postbox_inbox_pending WHERE seq = ?";

  private static final String FORGET_INBOX_ROW =
      "DELETE FROM postbox_inbox WHERE subscription = ? AND event_id = ?";

  private static final String MARK_PROCESSED =
      "UPDATE postbox_inbox SET status = 'PROCESSED', processed_at = ?"
          + " WHERE subscription = ? AND event_id = ?";

  private static final String COUNT_ATTEMPT =
      "UPDATE postbox_inbox_pending SET attempts = attempts + 1, last_error = ?,"
          + " next_attempt_at = ? WHERE seq = ?";

  private static final String ATTEMPTS = "SELECT attempts FROM postbox_inbox_pending WHERE seq = ?";

  private static final String DEPTH =
      "SELECT COUNT(*) FROM postbox_inbox_pending WHERE subscription = ?";

  private static final String CLAIM_HEADS =
      "SELECT * FROM postbox_inbox_pending WHERE subscription = ? AND head = ?"
          + " AND next_attempt_at <= ? ORDER BY seq";

  private final Dialect dialect;
  private final String claimSql;
  private final String promoteSql;

  PendingEventRepository(Dialect dialect) {
    this.dialect = dialect;
    // SKIP LOCKED lets workers pass heads another worker holds. Skipping cannot reorder a key:
    // only heads are candidates, and a key has one head at a time.
    this.claimSql = CLAIM_HEADS + dialect.limitSkippingLocked();
    // One statement per key, so that many keys go in one JDBC batch.
    this.promoteSql = dialect.promoteInboxHead();
  }

  /**
   * Queues new events in one JDBC batch, each a head unless its key already has a pending event.
   *
   * @return keys queued behind an existing pending event: re-check them with {@link #promote} after
   *     the commit
   */
  Set<String> enqueueAll(
      Connection c,
      String subscription,
      List<Envelope> events,
      List<Map<String, String>> metadata,
      Instant now)
      throws SQLException {
    return enqueue(c, subscription, events, metadata, 0, null, now);
  }

  /**
   * Queues an event whose handler failed {@code attempts} times, to be tried again at {@code
   * retryAt}: the head of its key unless the key already has a pending event.
   *
   * @return true if it was queued behind an existing pending event: re-check its key with {@link
   *     #promote} after the commit
   */
  boolean enqueueFailed(
      Connection c,
      String subscription,
      Envelope event,
      Map<String, String> metadata,
      int attempts,
      String error,
      Instant retryAt)
      throws SQLException {
    return !enqueue(
            c,
            subscription,
            List.of(event),
            List.of(metadata),
            attempts,
            DeadLetterFields.storable(error, 4000),
            retryAt)
        .isEmpty();
  }

  private Set<String> enqueue(
      Connection c,
      String subscription,
      List<Envelope> events,
      List<Map<String, String>> metadata,
      int attempts,
      String error,
      Instant nextAttempt)
      throws SQLException {
    Instant now = nextAttempt;
    if (events.isEmpty()) {
      return new HashSet<>(); // no statement that never runs (see LeaseManager)
    }
    Set<String> keys = new HashSet<>();
    for (Envelope e : events) {
      if (e.key() != null) {
        keys.add(e.key());
      }
    }
    Set<String> behind = queued(c, subscription, keys);
    Set<String> seen = new HashSet<>();
    try (PreparedStatement ps = c.prepareStatement(ENQUEUE)) {
      for (int i = 0; i < events.size(); i++) {
        Envelope e = events.get(i);
        ps.setString(1, subscription);
        ps.setString(2, e.id());
        ps.setString(3, e.key());
        ps.setString(4, e.type());
        ps.setString(5, e.source());
        ps.setString(6, e.subject());
        ps.setString(7, e.dataContentType());
        dialect.bind(ps, 8, e.time());
        ps.setString(9, StringMapJson.write(e.headers()));
        ps.setBytes(10, e.payload());
        ps.setString(11, StringMapJson.write(metadata.get(i)));
        ps.setInt(12, attempts);
        dialect.bind(ps, 13, now);
        ps.setBoolean(14, e.key() == null || (seen.add(e.key()) && !behind.contains(e.key())));
        ps.setString(15, error);
        ps.addBatch();
      }
      ps.executeBatch();
    }
    return behind;
  }

  /** Keys per IN list when checking for queued events. */
  private static final int IN_CHUNK = 100;

  private static final String KEYS_PENDING =
      "SELECT DISTINCT event_key FROM postbox_inbox_pending WHERE subscription = ?"
          + " AND event_key IN (";

  /**
   * Which of these keys have a pending event (in committed state, or this transaction's): the keys
   * held in the database, whose new events must queue behind.
   */
  static Set<String> queued(Connection c, String subscription, Collection<String> keys)
      throws SQLException {
    Set<String> found = new HashSet<>();
    List<String> all = new ArrayList<>(keys);
    for (int from = 0; from < all.size(); from += IN_CHUNK) {
      List<String> chunk = all.subList(from, Math.min(all.size(), from + IN_CHUNK));
      String marks = String.join(", ", java.util.Collections.nCopies(chunk.size(), "?"));
      try (PreparedStatement ps = c.prepareStatement(KEYS_PENDING + marks + ")")) {
        ps.setString(1, subscription);
        for (int i = 0; i < chunk.size(); i++) {
          ps.setString(i + 2, chunk.get(i));
        }
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            found.add(rs.getString(1));
          }
        }
      }
    }
    return found;
  }

  /**
   * Makes the oldest pending event of a key its head, if it is not one yet.
   *
   * @return false if nothing was promoted: the key has no pending event, or has its head already
   */
  boolean promote(Connection c, String subscription, String key) throws SQLException {
    return promoteAll(c, subscription, List.of(key)).isEmpty();
  }

  /**
   * {@link #promote} for many keys in one JDBC batch, in key order, as every transaction that
   * promotes does, so that two of them never wait on each other's rows in opposite orders.
   *
   * @return the keys for which nothing was promoted (or the driver did not say)
   */
  Set<String> promoteAll(Connection c, String subscription, Collection<String> keys)
      throws SQLException {
    if (keys.isEmpty()) {
      return new HashSet<>();
    }
    List<String> sorted = new ArrayList<>(new java.util.TreeSet<>(keys));
    try (PreparedStatement ps = c.prepareStatement(promoteSql)) {
      for (String key : sorted) {
        ps.setString(1, subscription);
        ps.setString(2, key);
        ps.addBatch();
      }
      int[] counts = ps.executeBatch();
      Set<String> notPromoted = new HashSet<>();
      for (int i = 0; i < counts.length; i++) {
        if (counts[i] != 1) {
          notPromoted.add(sorted.get(i));
        }
      }
      return notPromoted;
    }
  }

  /**
   * Promotes every key whose oldest pending event is not a head: the repair after a crash between a
   * commit and its re-check. Reads the subscription's waiting events; run it rarely.
   *
   * @return how many heads were restored
   */
  int sweep(Connection c, String subscription) throws SQLException {
    Set<String> keys = keysWithHead(c, subscription, false);
    keys.removeAll(keysWithHead(c, subscription, true));
    return keys.size() - promoteAll(c, subscription, keys).size();
  }

  private Set<String> keysWithHead(Connection c, String subscription, boolean head)
      throws SQLException {
    Set<String> keys = new HashSet<>();
    try (PreparedStatement ps = c.prepareStatement(KEYS_WITH_HEAD)) {
      ps.setString(1, subscription);
      ps.setBoolean(2, head);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          keys.add(rs.getString(1));
        }
      }
    }
    return keys;
  }

  /** What a claim locked: the runnable heads, and stale rows (see {@link Stale}). */
  record Claimed(List<Pending> ready, List<Stale> stale) {}

  /** Locks up to {@code limit} ready heads of their keys, oldest first; held until the commit. */
  Claimed claim(Connection c, String subscription, Instant now, int limit) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(claimSql)) {
      ps.setString(1, subscription);
      ps.setBoolean(2, true);
      dialect.bind(ps, 3, now);
      ps.setInt(4, limit);
      List<Pending> out = new ArrayList<>();
      List<Stale> stale = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          PendingRows.read(rs, dialect, out, stale);
        }
      }
      return new Claimed(out, stale);
    }
  }

  /**
   * A stale row, dead-lettered by the caller: it leaves the queue and the inbox, and its key's next
   * event becomes the head.
   */
  void dropStale(Connection c, String subscription, Stale u) throws SQLException {
    try (PreparedStatement delete = c.prepareStatement(LEAVE)) {
      delete.setLong(1, u.seq());
      delete.executeUpdate();
    }
    try (PreparedStatement forget = c.prepareStatement(FORGET_INBOX_ROW)) {
      forget.setString(1, subscription);
      forget.setString(2, u.id());
      forget.executeUpdate();
    }
    if (u.key() != null) {
      promote(c, subscription, u.key());
    }
  }

  /**
   * The handlers ran: the events leave the queue, their inbox rows say PROCESSED, and the next
   * event of each key becomes its head; three JDBC batches, whatever the claim's size.
   *
   * @return keys with no next event promoted: re-check them with {@link #promoteAll} after the
   *     commit
   */
  Set<String> processedAll(Connection c, String subscription, List<Pending> done, Instant now)
      throws SQLException {
    if (done.isEmpty()) {
      return new HashSet<>(); // no statement that never runs (see LeaseManager)
    }
    Set<String> keys = new HashSet<>();
    try (PreparedStatement delete = c.prepareStatement(LEAVE);
        PreparedStatement mark = c.prepareStatement(MARK_PROCESSED)) {
      for (Pending p : done) {
        delete.setLong(1, p.seq());
        delete.addBatch();
        dialect.bind(mark, 1, now);
        mark.setString(2, subscription);
        mark.setString(3, p.event().id());
        mark.addBatch();
        if (p.event().key() != null) {
          keys.add(p.event().key());
        }
      }
      delete.executeBatch();
      mark.executeBatch();
    }
    return promoteAll(c, subscription, keys);
  }

  /**
   * The handler failed: counts the attempt and sets when the event may be tried again.
   *
   * @return the attempts so far, or 0 if the event is no longer queued
   */
  int failed(Connection c, Pending p, String error, Instant retryAt) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(COUNT_ATTEMPT)) {
      ps.setString(1, DeadLetterFields.storable(error, 4000));
      dialect.bind(ps, 2, retryAt);
      ps.setLong(3, p.seq());
      if (ps.executeUpdate() == 0) {
        return 0;
      }
    }
    try (PreparedStatement ps = c.prepareStatement(ATTEMPTS)) {
      ps.setLong(1, p.seq());
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getInt(1) : 0;
      }
    }
  }

  /**
   * Dead-lettered: the event leaves the queue and the inbox, so that a replay, or a later
   * redelivery, runs it through the idempotent path again (as in inline mode, where a failed event
   * never left an inbox row). The next event of its key becomes the head.
   *
   * @return as for {@link #processed}
   */
  boolean deadLettered(Connection c, String subscription, Pending p) throws SQLException {
    boolean next = leave(c, subscription, p);
    try (PreparedStatement ps = c.prepareStatement(FORGET_INBOX_ROW)) {
      ps.setString(1, subscription);
      ps.setString(2, p.event().id());
      ps.executeUpdate();
    }
    return next;
  }

  /**
   * Removes a key's queued events, with their inbox rows, and returns them oldest first (sequenced
   * mode parks them as letters behind the key's new open letter, in the same transaction).
   */
  List<Pending> takeKey(Connection c, String subscription, String key) throws SQLException {
    List<Pending> out = new ArrayList<>();
    List<Stale> stale = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(OF_KEY)) {
      ps.setString(1, subscription);
      ps.setString(2, key);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          PendingRows.read(rs, dialect, out, stale);
        }
      }
    }
    // a stale row stays: the sweep makes it a head, and the claim dead-letters it as MALFORMED
    for (Pending p : out) {
      try (PreparedStatement delete = c.prepareStatement(LEAVE)) {
        delete.setLong(1, p.seq());
        delete.executeUpdate();
      }
      try (PreparedStatement forget = c.prepareStatement(FORGET_INBOX_ROW)) {
        forget.setString(1, subscription);
        forget.setString(2, p.event().id());
        forget.executeUpdate();
      }
    }
    return out;
  }

  /** Events still waiting for a worker in a subscription. */
  long depth(Connection c, String subscription) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(DEPTH)) {
      ps.setString(1, subscription);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /** Removes the event and promotes its key's next; true if there is no re-check to do. */
  private boolean leave(Connection c, String subscription, Pending p) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(LEAVE)) {
      ps.setLong(1, p.seq());
      ps.executeUpdate();
    }
    return p.event().key() == null || promote(c, subscription, p.event().key());
  }
}
