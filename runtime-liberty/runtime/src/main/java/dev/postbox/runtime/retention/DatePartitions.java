package dev.postbox.runtime.retention;

import dev.postbox.runtime.db.DataAccessException;
import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Transactions;
import java.lang.System.Logger;
import java.lang.System.Logger.Level;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * Date-partitioned retention of the outbox and the inbox (PostgreSQL, opt-in with {@code
 * postbox.date-partitions=true}; the tables are converted by {@code
 * db/postbox/postgresql-date-partitions}). Each table is partitioned by RANGE of a {@code bucket}
 * number; new rows go to the current bucket ({@code postbox_bucket}, read by the column's default).
 * {@link #maintain} creates the next buckets' partitions ahead of time, moves to the next bucket
 * once the current one is older than the interval, and drops a bucket's partition once every row in
 * it is settled and older than the retention: a DROP frees its pages at once, where batched DELETEs
 * leave dead rows, bloated indexes and vacuum work behind.
 *
 * <p><b>Dedup across buckets.</b> The inbox's unique key includes the bucket (PostgreSQL requires
 * the partition key in every unique index of a partitioned table), so it only catches a copy
 * recorded in the same bucket. {@link #inEarlierBuckets} catches the rest: the recording
 * transaction takes a shared advisory lock first, then looks the ids up in the earlier buckets,
 * then inserts into the current one. The bucket moves on only under the same lock held exclusively,
 * so every transaction that wrote to the old bucket has committed before one writes to the new
 * bucket, and that one's look sees their rows. {@code DatePartitionsIT} shows both halves fail
 * without their part.
 *
 * <p>Table and partition names in the DDL below are built only from this class's constants and
 * bucket numbers, never from input; every value is a parameter.
 */
public final class DatePartitions {

  private static final Logger LOG = System.getLogger(DatePartitions.class.getName());

  /**
   * The bucket lock's key: Postbox's space ("post") in the high half, the inbox table's oid in the
   * low half, so two schemas in one database (advisory locks are per database) never share it.
   */
  private static final String BUCKET_LOCK_KEY =
      "(CAST(? AS BIGINT) << 32) | CAST(CAST(to_regclass('postbox_inbox') AS oid) AS BIGINT)";

  private static final long LOCK_SPACE = 0x706F7374L;

  /**
   * SQL states after which a step is left to the next run: a lock wait past the timeout (55P03),
   * and another instance's maintenance having created (42P07, or 23505 on the catalog) or dropped
   * (42P01) the same partition a moment before.
   */
  private static final Set<String> RETRY_LATER = Set.of("55P03", "42P07", "23505", "42P01");

  /** Buckets whose partitions exist ahead of the current one. */
  static final int AHEAD = 2;

  /** The two tables, with what "settled" and "when" mean for each. */
  public enum Table {
    /**
     * Settled: dispatched or discarded; when: the last settling or the newest row's creation (ids
     * grow with time), whichever is later, both read from an index's end.
     */
    OUTBOX(
        "postbox_outbox",
        "SELECT GREATEST((SELECT MAX(dispatched_at) FROM %1$s"
            + " WHERE status IN ('DISPATCHED', 'DISCARDED')),"
            + " (SELECT created_at FROM %1$s ORDER BY id DESC FETCH FIRST 1 ROWS ONLY))",
        // two probes, each answered by its partial index (an IN would read the whole partition)
        "SELECT EXISTS (SELECT 1 FROM %1$s WHERE status = 'PENDING')"
            + " OR EXISTS (SELECT 1 FROM %1$s WHERE status = 'FAILED')"),
    /** Settled: processed (RECEIVED rows wait for a deferred worker); when: received. */
    INBOX(
        "postbox_inbox",
        "SELECT MAX(received_at) FROM %s",
        // the conversion's partial index postbox_inbox_received_only answers it
        "SELECT EXISTS (SELECT 1 FROM %s WHERE status = 'RECEIVED')");

    private final String name;
    private final String latestSql;
    private final String unsettledSql;

    Table(String name, String latestSql, String unsettledSql) {
      this.name = name;
      this.latestSql = latestSql;
      this.unsettledSql = unsettledSql;
    }

    String partition(int bucket) {
      return name + "_b" + bucket;
    }
  }

  /**
   * What one {@link #maintain} run did.
   *
   * @param current the bucket new rows go to, after the run
   * @param created buckets whose partitions this run created
   * @param switched whether this run moved to the next bucket
   * @param dropped buckets whose partitions this run dropped
   * @param heldBack past-retention buckets kept because rows in them are not settled
   */
  public record Run(
      int current,
      List<Integer> created,
      boolean switched,
      List<Integer> dropped,
      List<Integer> heldBack) {}

  private final Transactions tx;
  private final Clock clock;
  private final Table table;

  public DatePartitions(Transactions tx, Clock clock, Table table) {
    this.tx = tx;
    this.clock = clock;
    this.table = table;
  }

  /**
   * Retention's hand-over: if the table is date-partitioned, runs {@link #maintain} and returns
   * true; otherwise returns false and the caller deletes. Looked up at every run, never remembered:
   * a DELETE written for the plain table must not run on a partitioned one.
   */
  public static boolean maintainIfPartitioned(
      Transactions tx, Dialect dialect, Clock clock, Table table, Duration keep) {
    if (!tx.inTransaction(c -> isPartitioned(c, dialect, table))) {
      return false;
    }
    Run run = new DatePartitions(tx, clock, table).maintain(keep);
    if (run.switched() || !run.dropped().isEmpty()) {
      LOG.log(
          Level.INFO,
          table.name
              + " date partitions: now bucket "
              + run.current()
              + (run.dropped().isEmpty() ? "" : "; dropped buckets " + run.dropped()));
    }
    return true;
  }

  /** Whether the table is date-partitioned (converted); false on any database but PostgreSQL. */
  public static boolean isPartitioned(Connection c, Dialect dialect, Table table)
      throws SQLException {
    if (!dialect.partitionsByDate()) {
      return false;
    }
    try (PreparedStatement ps =
        c.prepareStatement("SELECT relkind FROM pg_class WHERE oid = to_regclass(?)")) {
      ps.setString(1, table.name);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() && "p".equals(rs.getString(1));
      }
    }
  }

  /**
   * Sets the bucket interval of both tables (from {@code postbox.date-partitions.interval}); it
   * takes effect at the next move to a new bucket.
   */
  public static void setInterval(Transactions tx, Duration interval) {
    tx.inTransaction(
        c -> {
          try (PreparedStatement ps =
              c.prepareStatement("UPDATE postbox_bucket SET interval_secs = ?")) {
            ps.setLong(1, Math.max(1, interval.toSeconds()));
            return ps.executeUpdate();
          }
        });
  }

  /**
   * For the inbox's recording transaction, as its first statements: takes the shared side of the
   * bucket lock (held to the end of the transaction) and returns which of {@code ids} an earlier
   * bucket already holds for the subscription. Those are duplicates; the rest are inserted into the
   * current bucket, whose unique key catches copies within it.
   */
  public static Set<String> inEarlierBuckets(
      Connection c, String subscription, Collection<String> ids) throws SQLException {
    try (PreparedStatement lock =
        c.prepareStatement("SELECT pg_advisory_xact_lock_shared(" + BUCKET_LOCK_KEY + ")")) {
      lock.setLong(1, LOCK_SPACE);
      lock.executeQuery().close();
    }
    Set<String> found = new HashSet<>();
    Array array = c.createArrayOf("varchar", ids.toArray());
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT event_id FROM postbox_inbox WHERE subscription = ? AND event_id = ANY (?)"
                + " AND bucket < postbox_current_bucket('postbox_inbox')")) {
      ps.setString(1, subscription);
      ps.setArray(2, array);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          found.add(rs.getString(1));
        }
      }
    } finally {
      array.free();
    }
    return found;
  }

  /**
   * One maintenance run: partitions ahead, the move to the next bucket when the current one is
   * older than the interval, and the drops of buckets past {@code keep}. Each step is a transaction
   * of its own with a short lock timeout: a step that cannot have its lock at once is left to the
   * next run rather than queue in front of the application's writes.
   */
  public Run maintain(Duration keep) {
    State state = state();
    List<Integer> created = new ArrayList<>(ensureAhead(state.current));
    boolean switched = false;
    Instant now = clock.instant();
    if (!now.isBefore(state.openedAt.plusSeconds(state.intervalSecs))) {
      switched = advance(state.current, now);
      if (switched) {
        state = state();
        created.addAll(ensureAhead(state.current));
      } else if (now.isAfter(state.openedAt.plusSeconds(2 * state.intervalSecs))) {
        LOG.log(
            Level.WARNING,
            table.name
                + ": bucket "
                + state.current
                + " has been open since "
                + state.openedAt
                + ", over twice the interval, and could not move on: for the inbox, recording"
                + " transactions held the bucket lock past 0.5 s at every try (long handlers);"
                + " nothing is dropped until it moves");
      }
    }
    List<Integer> dropped = new ArrayList<>();
    List<Integer> heldBack = new ArrayList<>();
    Instant cutoff = now.minus(keep);
    for (int bucket : buckets()) {
      if (bucket >= state.current) {
        continue;
      }
      switch (dropIfExpiredOrLater(bucket, cutoff)) {
        case DROPPED -> dropped.add(bucket);
        case HELD_BACK -> heldBack.add(bucket);
        case KEPT -> {}
      }
    }
    if (!heldBack.isEmpty()) {
      LOG.log(
          Level.WARNING,
          table.name
              + ": buckets "
              + heldBack
              + " are past the retention but hold rows not settled yet (outbox: PENDING or FAILED;"
              + " inbox: RECEIVED); they are dropped once those rows settle");
    }
    return new Run(state.current, created, switched, dropped, heldBack);
  }

  private record State(int current, Instant openedAt, long intervalSecs) {}

  private State state() {
    return tx.inTransaction(
        c -> {
          try (PreparedStatement ps =
              c.prepareStatement(
                  "SELECT current_bucket, opened_at, interval_secs FROM postbox_bucket"
                      + " WHERE table_name = ?")) {
            ps.setString(1, table.name);
            try (ResultSet rs = ps.executeQuery()) {
              if (!rs.next()) {
                throw new IllegalStateException(table.name + " has no row in postbox_bucket");
              }
              return new State(
                  rs.getInt(1),
                  rs.getObject(2, java.time.OffsetDateTime.class).toInstant(),
                  rs.getLong(3));
            }
          }
        });
  }

  /** The buckets whose partitions exist, in order. */
  List<Integer> buckets() {
    return tx.inTransaction(
        c -> {
          TreeSet<Integer> out = new TreeSet<>();
          String prefix = table.name + "_b";
          try (PreparedStatement ps =
              c.prepareStatement(
                  "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
                      + " WHERE i.inhparent = to_regclass(?)")) {
            ps.setString(1, table.name);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                String name = rs.getString(1);
                if (name.startsWith(prefix)) {
                  try {
                    out.add(Integer.parseInt(name.substring(prefix.length())));
                  } catch (NumberFormatException notOurs) {
                    // a partition someone else attached: not Postbox's to drop
                  }
                }
              }
            }
          }
          return new ArrayList<>(out);
        });
  }

  private List<Integer> ensureAhead(int current) {
    List<Integer> existing = buckets();
    List<Integer> created = new ArrayList<>();
    for (int b = current; b <= current + AHEAD; b++) {
      if (existing.contains(b)) {
        continue;
      }
      int bucket = b;
      // CREATE TABLE ... PARTITION OF would take the parent's ACCESS EXCLUSIVE lock and hold every
      // writer back while it waits; ATTACH of an empty table takes SHARE UPDATE EXCLUSIVE, which
      // reads and writes pass.
      boolean done =
          ddl(
              "1s",
              c -> {
                try (Statement s = c.createStatement()) {
                  s.execute(
                      "CREATE TABLE "
                          + table.partition(bucket)
                          + " (LIKE "
                          + table.name
                          + " INCLUDING DEFAULTS INCLUDING CONSTRAINTS)");
                  s.execute(
                      "ALTER TABLE "
                          + table.name
                          + " ATTACH PARTITION "
                          + table.partition(bucket)
                          + " FOR VALUES FROM ("
                          + bucket
                          + ") TO ("
                          + (bucket + 1)
                          + ")");
                }
                return true;
              });
      if (done) {
        created.add(bucket);
      }
    }
    return created;
  }

  /**
   * Moves to the next bucket, under the bucket lock held exclusively (the inbox's): it waits for
   * the recording transactions that hold it shared, and holds new ones back only until it commits.
   */
  private boolean advance(int current, Instant now) {
    return ddl(
        "500ms",
        c -> {
          if (table == Table.INBOX) {
            try (PreparedStatement lock =
                c.prepareStatement("SELECT pg_advisory_xact_lock(" + BUCKET_LOCK_KEY + ")")) {
              lock.setLong(1, LOCK_SPACE);
              lock.executeQuery().close();
            }
          }
          try (PreparedStatement exists = c.prepareStatement("SELECT to_regclass(?)")) {
            exists.setString(1, table.partition(current + 1));
            try (ResultSet rs = exists.executeQuery()) {
              if (!rs.next() || rs.getString(1) == null) {
                return false; // created by the next run first; never move to a missing partition
              }
            }
          }
          try (PreparedStatement ps =
              c.prepareStatement(
                  "UPDATE postbox_bucket SET current_bucket = ?, opened_at = ?"
                      + " WHERE table_name = ? AND current_bucket = ?")) {
            ps.setInt(1, current + 1);
            ps.setObject(2, java.time.OffsetDateTime.ofInstant(now, java.time.ZoneOffset.UTC));
            ps.setString(3, table.name);
            ps.setInt(4, current);
            return ps.executeUpdate() == 1;
          }
        });
  }

  private enum Drop {
    DROPPED,
    HELD_BACK,
    KEPT
  }

  /** {@link #dropIfExpired}, leaving it to the next run if another instance got there first. */
  private Drop dropIfExpiredOrLater(int bucket, Instant cutoff) {
    try {
      return dropIfExpired(bucket, cutoff);
    } catch (DataAccessException e) {
      if (retryLater(e)) {
        return Drop.KEPT;
      }
      throw e;
    }
  }

  private Drop dropIfExpired(int bucket, Instant cutoff) {
    String partition = table.partition(bucket);
    // First a look without locks, from the indexes' ends and partial indexes only.
    Drop looks = tx.inTransaction(c -> judge(c, partition, cutoff));
    if (looks != Drop.DROPPED) {
      return looks;
    }
    // Then the parent's lock first, as every UPDATE and DELETE on the parent takes it before the
    // partitions' (taking the partition's first would deadlock with them), with a short timeout:
    // while it waits, the table's new statements queue behind it.
    Drop[] outcome = {Drop.KEPT};
    ddl(
        "200ms",
        c -> {
          try (Statement s = c.createStatement()) {
            s.execute("LOCK TABLE " + table.name + " IN ACCESS EXCLUSIVE MODE");
          }
          outcome[0] = judge(c, partition, cutoff); // nothing changes in it from here
          if (outcome[0] == Drop.DROPPED) {
            try (Statement s = c.createStatement()) {
              s.execute("DROP TABLE " + partition);
            }
          }
          return true;
        });
    return outcome[0];
  }

  /** Whether a past bucket may go: DROPPED if so, else KEPT or HELD_BACK. Index reads only. */
  private Drop judge(Connection c, String partition, Instant cutoff) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(String.format(table.latestSql, partition));
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      java.time.OffsetDateTime latest = rs.getObject(1, java.time.OffsetDateTime.class);
      if (latest != null && !latest.toInstant().isBefore(cutoff)) {
        return Drop.KEPT;
      }
    }
    try (PreparedStatement ps = c.prepareStatement(String.format(table.unsettledSql, partition));
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getBoolean(1) ? Drop.HELD_BACK : Drop.DROPPED;
    }
  }

  private static boolean retryLater(DataAccessException e) {
    return e.getCause() instanceof SQLException sql && RETRY_LATER.contains(sql.getSQLState());
  }

  /**
   * Runs a step in a transaction with a lock timeout; a step that times out on a lock (SQL state
   * 55P03) returns false, to be tried again at the next run.
   */
  private boolean ddl(String lockTimeout, Transactions.Work<Boolean> step) {
    try {
      return tx.inTransaction(
          c -> {
            try (Statement s = c.createStatement()) {
              s.execute("SET LOCAL lock_timeout = '" + lockTimeout + "'");
            }
            return step.run(c);
          });
    } catch (DataAccessException e) {
      if (retryLater(e) && e.getCause() instanceof SQLException sql) {
        LOG.log(
            Level.DEBUG,
            table.name
                + ": maintenance step left to the next run ("
                + sql.getSQLState()
                + ": a lock wait past "
                + lockTimeout
                + ", or another instance's maintenance)");
        return false;
      }
      throw e;
    }
  }
}
