package dev.postbox.runtime.outbox;

import dev.postbox.runtime.api.OutboxEvent;
import dev.postbox.runtime.api.OutboxRow;
import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.StringMapJson;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * The outbox table, in plain parameterised JDBC. Every method works on the caller's connection and
 * inside the caller's transaction. (Over 400 lines: a repository, one method per statement on the
 * outbox table, from insert and claim to the operator's bulk retry and discard.)
 */
public final class OutboxRepository {

  private static final String INSERT =
      "INSERT INTO postbox_outbox (event_id, destination, partition_no, event_key, event_type,"
          + " source, subject, content_type, headers, payload, event_time, created_at,"
          + " next_attempt_at, status, due_at, attempts)"
          + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)";

  /** The statuses of rows that wait for their due time (see {@link #insertScheduled}). */
  static final String SCHEDULED_STATUSES = "('SCHEDULED', 'SCHEDULED_KEY')";

  private static final String RESCHEDULE =
      "UPDATE postbox_outbox SET attempts = ?, next_attempt_at = ?, last_error = ?"
          + " WHERE id = ? AND status = 'PENDING'";

  private static final String FAIL =
      "UPDATE postbox_outbox SET status = 'FAILED', attempts = ?, last_error = ?,"
          + " next_attempt_at = ? WHERE id = ? AND status = 'PENDING'";

  private static final String RESUME =
      "UPDATE postbox_outbox SET next_attempt_at = ? WHERE destination = ?"
          + " AND status = 'PENDING' AND next_attempt_at > ?";

  static final String PENDING = "PENDING";
  static final String DISPATCHED = "DISPATCHED";
  static final String FAILED = "FAILED";
  static final String DISCARDED = "DISCARDED";
  static final String SCHEDULED = "SCHEDULED";
  static final String SCHEDULED_KEY = "SCHEDULED_KEY";

  private static final String COLUMNS =
      "o.id, o.partition_no, o.event_id, o.destination, o.event_key, o.event_type, o.source,"
          + " o.subject, o.content_type, o.headers, o.payload, o.event_time, o.created_at, o.attempts,"
          + " o.due_at";

  private final Dialect dialect;
  private final int partitions;
  private final String claim;
  private final String claimTail;

  /** Beyond this many waiting keys, they are filtered after the query instead of in it. */
  static final int MAX_EXCLUDED_KEYS = 1_000;

  public OutboxRepository(Dialect dialect, int partitions) {
    this.dialect = dialect;
    this.partitions = partitions;
    // Due pending rows of one partition in id order: a range scan of the claim index. Keys that
    // must wait are excluded by a parameter list (see claim).
    this.claim =
        "SELECT "
            + COLUMNS
            + " FROM postbox_outbox o"
            + " WHERE o.partition_no = ? AND o.status = 'PENDING' AND o.next_attempt_at <= ?";
    this.claimTail = " ORDER BY o.id " + dialect.limit() + " " + dialect.claimLock();
  }

  public Dialect dialect() {
    return dialect;
  }

  public int partitions() {
    return partitions;
  }

  /** Inserts an event as PENDING, due now. For applications that write with JDBC. */
  public void insert(Connection c, OutboxEvent e, Instant now) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(INSERT)) {
      bindInsert(ps, e, now);
      ps.executeUpdate();
    }
  }

  /** Inserts many events in one JDBC batch. */
  public void insertAll(Connection c, Collection<OutboxEvent> events, Instant now)
      throws SQLException {
    if (events.isEmpty()) {
      return; // no statement that never runs (see LeaseManager)
    }
    try (PreparedStatement ps = c.prepareStatement(INSERT)) {
      for (OutboxEvent e : events) {
        bindInsert(ps, e, now);
        ps.addBatch();
      }
      ps.executeBatch();
    }
  }

  /**
   * Inserts an event that waits until {@code due}: SCHEDULED, or SCHEDULED_KEY when it holds its
   * key's later rows back until it is published. Outside the claim's range of PENDING rows until
   * {@link ScheduledRepository#promoteDue} turns it PENDING.
   */
  public void insertScheduled(
      Connection c, OutboxEvent e, Instant now, Instant due, boolean keepKeyOrder)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(INSERT)) {
      bindInsert(ps, e, now, due, keepKeyOrder ? SCHEDULED_KEY : SCHEDULED);
      ps.executeUpdate();
    }
  }

  private void bindInsert(PreparedStatement ps, OutboxEvent e, Instant now) throws SQLException {
    bindInsert(ps, e, now, now, PENDING);
  }

  private void bindInsert(
      PreparedStatement ps, OutboxEvent e, Instant now, Instant due, String status)
      throws SQLException {
    ps.setString(1, e.eventId());
    ps.setString(2, e.destination());
    ps.setInt(3, Partitioner.partition(e.key(), e.eventId(), partitions));
    ps.setString(4, e.key());
    ps.setString(5, e.type());
    ps.setString(6, e.source());
    ps.setString(7, e.subject());
    ps.setString(8, e.contentType());
    ps.setString(9, StringMapJson.write(e.headers()));
    ps.setBytes(10, e.payload());
    dialect.bind(ps, 11, e.time());
    dialect.bind(ps, 12, now);
    dialect.bind(ps, 13, due);
    ps.setString(14, status);
    // the due time only of a scheduled row that does not hold its key: the claim places it among
    // its key's rows by due time (DueOrder); a SCHEDULED_KEY row keeps its id's place
    dialect.bind(ps, 15, SCHEDULED.equals(status) ? due : null);
  }

  /**
   * Claims up to {@code limit} due rows of a partition in id order, locking them for this
   * transaction. Rows of a key that has a FAILED row or a row waiting out a back-off are left out:
   * that key waits, and no other.
   *
   * <p>Two plain queries rather than one with a per-row {@code NOT EXISTS}: with bound parameters,
   * PostgreSQL's generic plan ran that anti-join as a scan of the partition per candidate row
   * (hundreds of ms per batch of 500). The waiting keys are few, and found through the status
   * indexes.
   */
  public List<OutboxRow> claim(Connection c, int partition, Instant now, int limit)
      throws SQLException {
    return claim(c, partition, now, limit, waitingKeys(c, List.of(partition), now));
  }

  /**
   * As {@link #claim(Connection, int, Instant, int)}, with the waiting keys already read (by {@link
   * #waitingKeys(Connection, Collection, Instant)} for this and other partitions: a key lives in
   * one partition, so keys of other partitions never match).
   */
  public List<OutboxRow> claim(
      Connection c, int partition, Instant now, int limit, Set<String> waiting)
      throws SQLException {
    return claim(c, partition, now, limit, new Waiting(waiting, java.util.Map.of()));
  }

  /**
   * As {@link #claim(Connection, int, Instant, int)}, with the waiting keys already read (by {@link
   * #waiting(Connection, Collection, Instant)}): whole keys, and keys held from a row on by a
   * SCHEDULED_KEY row.
   */
  public List<OutboxRow> claim(Connection c, int partition, Instant now, int limit, Waiting waiting)
      throws SQLException {
    boolean inQuery = !waiting.keys().isEmpty() && waiting.keys().size() <= MAX_EXCLUDED_KEYS;
    boolean filtered = (!inQuery && !waiting.keys().isEmpty()) || !waiting.heldFrom().isEmpty();
    List<OutboxRow> rows = new ArrayList<>();
    long after = Long.MIN_VALUE;
    while (true) {
      // With rows filtered here (too many waiting keys for the query, or keys held from a
      // scheduled row on) a page can come back all filtered: read on, page by page, or the keys
      // behind them would starve.
      Page page = claimPage(c, partition, now, waiting, inQuery, after, limit - rows.size(), rows);
      if (!filtered || rows.size() >= limit || page.read() < page.asked()) {
        return DueOrder.arrange(rows); // per key, due-then-id
      }
      after = page.lastId();
    }
  }

  /**
   * The keys the claim leaves out: {@code keys} wait whole (a FAILED row, a back-off), {@code
   * heldFrom} from the id of their first SCHEDULED_KEY row on (rows before it still go).
   */
  public record Waiting(Set<String> keys, java.util.Map<String, Long> heldFrom) {
    /** Whether the row of this key and id must wait. */
    public boolean holds(String key, long id) {
      if (key == null) {
        return false;
      }
      Long from = heldFrom.get(key);
      return keys.contains(key) || (from != null && id > from);
    }
  }

  private record Page(int asked, int read, long lastId) {}

  private Page claimPage(
      Connection c,
      int partition,
      Instant now,
      Waiting waiting,
      boolean inQuery,
      long after,
      int limit,
      List<OutboxRow> rows)
      throws SQLException {
    String sql =
        claim
            + (after == Long.MIN_VALUE ? "" : " AND o.id > ?")
            + (inQuery
                ? " AND (o.event_key IS NULL OR o.event_key NOT IN ("
                    + placeholders(waiting.keys().size())
                    + "))"
                : "")
            + claimTail;
    int read = 0;
    long lastId = after;
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      int i = 1;
      ps.setInt(i++, partition);
      dialect.bind(ps, i++, now);
      if (after != Long.MIN_VALUE) {
        ps.setLong(i++, after);
      }
      if (inQuery) {
        for (String key : waiting.keys()) {
          ps.setString(i++, key);
        }
      }
      ps.setInt(i, limit);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          read++;
          lastId = rs.getLong("id");
          String key = rs.getString("event_key");
          if (waiting.holds(key, lastId)) {
            continue; // too many waiting keys for the query, or held behind a scheduled row
          }
          rows.add(
              new OutboxRow(
                  rs.getLong("id"),
                  rs.getInt("partition_no"),
                  rs.getString("event_id"),
                  rs.getString("destination"),
                  key,
                  rs.getString("event_type"),
                  rs.getString("source"),
                  rs.getString("subject"),
                  rs.getString("content_type"),
                  StringMapJson.read(rs.getString("headers")),
                  rs.getBytes("payload"),
                  dialect.read(rs, "event_time"),
                  dialect.read(rs, "created_at"),
                  rs.getInt("attempts"),
                  dialect.read(rs, "due_at")));
        }
      }
    }
    return new Page(limit, read, lastId);
  }

  /**
   * A claim of a partition that filled its limit: without the scheduled rows (and their keys' rows
   * after them) that an unread row of their key may have fallen due before (see {@link
   * DueOrder#withoutOvertaken}); they go in a later turn. One look-up of the first unread plain row
   * (the claim index's next entry), only when the claim holds a keyed scheduled row.
   *
   * @param mayEmpty whether the claim may be left empty (its budget was less than a whole batch, so
   *     a later turn reads further)
   */
  public List<OutboxRow> withoutOvertaken(
      Connection c, int partition, List<OutboxRow> claimed, boolean mayEmpty) throws SQLException {
    if (!DueOrder.anyKeyedScheduled(claimed)) {
      return claimed;
    }
    long lastRead = claimed.stream().mapToLong(OutboxRow::id).max().orElseThrow();
    Instant horizon = null;
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT o.created_at FROM postbox_outbox o WHERE o.partition_no = ?"
                + " AND o.status = 'PENDING' AND o.id > ? AND o.due_at IS NULL ORDER BY o.id "
                + dialect.limit())) {
      ps.setInt(1, partition);
      ps.setLong(2, lastRead);
      ps.setInt(3, 1);
      try (ResultSet rs = ps.executeQuery()) {
        if (rs.next()) {
          horizon = dialect.read(rs, "created_at");
        }
      }
    }
    return DueOrder.withoutOvertaken(claimed, horizon, mayEmpty);
  }

  /**
   * Keys of the partitions held up by a FAILED row or a row whose next attempt is still ahead: one
   * statement for all of them.
   */
  public Set<String> waitingKeys(Connection c, Collection<Integer> partitionNos, Instant now)
      throws SQLException {
    Waiting w = waiting(c, partitionNos, now);
    Set<String> keys = new java.util.HashSet<>(w.keys());
    keys.addAll(w.heldFrom().keySet());
    return keys;
  }

  /**
   * The keys of the partitions that wait: whole keys held up by a FAILED row or a row whose next
   * attempt is still ahead, and keys held from their first SCHEDULED_KEY row on. One statement for
   * all of them.
   */
  public Waiting waiting(Connection c, Collection<Integer> partitionNos, Instant now)
      throws SQLException {
    Set<String> keys = new java.util.HashSet<>();
    java.util.Map<String, Long> heldFrom = new java.util.HashMap<>();
    if (partitionNos.isEmpty()) {
      return new Waiting(keys, heldFrom);
    }
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT event_key, status, MIN(id) FROM postbox_outbox WHERE partition_no IN ("
                + placeholders(partitionNos.size())
                + ") AND event_key IS NOT NULL"
                + " AND (status = 'FAILED' OR (status = 'PENDING' AND next_attempt_at > ?)"
                + " OR status = 'SCHEDULED_KEY') GROUP BY event_key, status")) {
      int i = 1;
      for (int partition : partitionNos) {
        ps.setInt(i++, partition);
      }
      dialect.bind(ps, i, now);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          if (SCHEDULED_KEY.equals(rs.getString(2))) {
            heldFrom.put(rs.getString(1), rs.getLong(3));
          } else {
            keys.add(rs.getString(1));
          }
        }
      }
    }
    return new Waiting(keys, heldFrom);
  }

  static String placeholders(int n) {
    return "?" + ",?".repeat(n - 1);
  }

  /**
   * Marks rows dispatched (or deletes them): one statement per 500 ids. Only a PENDING row changes,
   * as in {@link #reschedule}: an operator may have discarded a row meanwhile, and a discarded row
   * stays DISCARDED.
   */
  public void dispatched(Connection c, List<Long> ids, Instant now, boolean delete)
      throws SQLException {
    for (int from = 0; from < ids.size(); from += 500) {
      List<Long> chunk = ids.subList(from, Math.min(ids.size(), from + 500));
      String sql =
          delete
              ? "DELETE FROM postbox_outbox WHERE id IN ("
                  + placeholders(chunk.size())
                  + ") AND status = 'PENDING'"
              : "UPDATE postbox_outbox SET status = 'DISPATCHED', dispatched_at = ?, last_error = NULL"
                  + " WHERE id IN ("
                  + placeholders(chunk.size())
                  + ") AND status = 'PENDING'";
      try (PreparedStatement ps = c.prepareStatement(sql)) {
        int i = 1;
        if (!delete) {
          dialect.bind(ps, i++, now);
        }
        for (long id : chunk) {
          ps.setLong(i++, id);
        }
        ps.executeUpdate();
      }
    }
  }

  /**
   * A retriable failure: counts the attempt and sets when to try again. Only a PENDING row changes:
   * the relay settles after its broker call, outside the claim's transaction, and an operator may
   * have discarded the row (or another instance dispatched it) meanwhile.
   */
  public void reschedule(Connection c, long id, int attempts, Instant next, String error)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(RESCHEDULE)) {
      ps.setInt(1, attempts);
      dialect.bind(ps, 2, next);
      ps.setString(3, truncate(error));
      ps.setLong(4, id);
      ps.executeUpdate();
    }
  }

  /**
   * Rows not sent because their destination is out: due again at {@code next}, without counting an
   * attempt; one statement per 500 ids. Only PENDING rows change.
   */
  public void postpone(Connection c, List<Long> ids, Instant next, String error)
      throws SQLException {
    for (int from = 0; from < ids.size(); from += 500) {
      List<Long> chunk = ids.subList(from, Math.min(ids.size(), from + 500));
      try (PreparedStatement ps =
          c.prepareStatement(
              "UPDATE postbox_outbox SET next_attempt_at = ?, last_error = ? WHERE id IN ("
                  + placeholders(chunk.size())
                  + ") AND status = 'PENDING'")) {
        dialect.bind(ps, 1, next);
        ps.setString(2, truncate(error));
        int i = 3;
        for (long id : chunk) {
          ps.setLong(i++, id);
        }
        ps.executeUpdate();
      }
    }
  }

  /**
   * A permanent failure: the row stops, and so do later rows of its key. Its {@code
   * next_attempt_at} becomes the time it failed, which the automatic re-drive measures from. Only a
   * PENDING row changes (see {@link #reschedule}).
   */
  public void fail(Connection c, long id, int attempts, String error, Instant now)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(FAIL)) {
      ps.setInt(1, attempts);
      ps.setString(2, truncate(error));
      dialect.bind(ps, 3, now);
      ps.setLong(4, id);
      ps.executeUpdate();
    }
  }

  /**
   * After a destination's outage ends: its pending rows that wait for a later try become due now,
   * instead of each waiting out its own back-off. Returns how many.
   */
  public int resume(Connection c, String destination, Instant now) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(RESUME)) {
      dialect.bind(ps, 1, now);
      ps.setString(2, destination);
      dialect.bind(ps, 3, now);
      return ps.executeUpdate();
    }
  }

  /** Partitions that have due pending rows (the relay wakes those it holds). */
  public Set<Integer> partitionsWithWork(Connection c, Instant now) throws SQLException {
    Set<Integer> out = new TreeSet<>();
    try (PreparedStatement ps = c.prepareStatement(dialect.partitionsWithWork())) {
      dialect.bind(ps, 1, now);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(rs.getInt(1));
        }
      }
    }
    return out;
  }

  private static String truncate(String error) {
    if (error == null) {
      return null;
    }
    return error.length() <= 4000 ? error : error.substring(0, 3997) + "...";
  }
}
