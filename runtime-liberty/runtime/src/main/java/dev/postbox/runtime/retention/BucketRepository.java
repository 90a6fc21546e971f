package dev.postbox.runtime.retention;

import dev.postbox.runtime.db.Dialect;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * The date partitions' statements (PostgreSQL), on the caller's connection; {@link DatePartitions}
 * decides when to run them. Table and partition names in the DDL are built only from {@link
 * DatePartitions.Table}'s constants and bucket numbers, never from input; every value is a
 * parameter.
 */
final class BucketRepository {

  /**
   * The bucket lock's key: Postbox's space ("post") in the high half, the inbox table's oid in the
   * low half, so two schemas in one database (advisory locks are per database) never share it.
   */
  private static final String BUCKET_LOCK_KEY =
      "(CAST(? AS BIGINT) << 32) | CAST(CAST(to_regclass('postbox_inbox') AS oid) AS BIGINT)";

  private static final long LOCK_SPACE = 0x706F7374L;

  private static final String LOCK_SHARED =
      "SELECT pg_advisory_xact_lock_shared(" + BUCKET_LOCK_KEY + ")";

  private static final String LOCK_EXCLUSIVE =
      "SELECT pg_advisory_xact_lock(" + BUCKET_LOCK_KEY + ")";

  private static final String IN_EARLIER_BUCKETS =
      "SELECT event_id FROM postbox_inbox WHERE subscription = ? AND event_id = ANY (?)"
          + " AND bucket < postbox_current_bucket('postbox_inbox')";

  private static final String KIND = "SELECT relkind FROM pg_class WHERE oid = to_regclass(?)";

  private static final String SET_INTERVAL = "UPDATE postbox_bucket SET interval_secs = ?";

  private static final String STATE =
      "SELECT current_bucket, opened_at, interval_secs FROM postbox_bucket WHERE table_name = ?";

  private static final String PARTITIONS =
      "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
          + " WHERE i.inhparent = to_regclass(?)";

  private static final String EXISTS = "SELECT to_regclass(?)";

  private static final String ADVANCE =
      "UPDATE postbox_bucket SET current_bucket = ?, opened_at = ?"
          + " WHERE table_name = ? AND current_bucket = ?";

  /** A table's current bucket, since when, and the interval. */
  record State(int current, Instant openedAt, long intervalSecs) {}

  private BucketRepository() {}

  /** Whether the table is date-partitioned (converted); false on any database but PostgreSQL. */
  static boolean isPartitioned(Connection c, Dialect dialect, DatePartitions.Table table)
      throws SQLException {
    if (!dialect.partitionsByDate()) {
      return false;
    }
    try (PreparedStatement ps = c.prepareStatement(KIND)) {
      ps.setString(1, table.tableName());
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() && "p".equals(rs.getString(1));
      }
    }
  }

  static int setInterval(Connection c, long seconds) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(SET_INTERVAL)) {
      ps.setLong(1, seconds);
      return ps.executeUpdate();
    }
  }

  /**
   * Takes the shared side of the bucket lock (to the end of the transaction) and returns which of
   * {@code ids} an earlier bucket holds for the subscription.
   */
  static Set<String> inEarlierBuckets(Connection c, String subscription, Collection<String> ids)
      throws SQLException {
    try (PreparedStatement lock = c.prepareStatement(LOCK_SHARED)) {
      lock.setLong(1, LOCK_SPACE);
      lock.executeQuery().close();
    }
    Set<String> found = new HashSet<>();
    Array array = c.createArrayOf("varchar", ids.toArray());
    try (PreparedStatement ps = c.prepareStatement(IN_EARLIER_BUCKETS)) {
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

  /** Takes the bucket lock exclusively, to the end of the transaction. */
  static void lockExclusively(Connection c) throws SQLException {
    try (PreparedStatement lock = c.prepareStatement(LOCK_EXCLUSIVE)) {
      lock.setLong(1, LOCK_SPACE);
      lock.executeQuery().close();
    }
  }

  static State state(Connection c, DatePartitions.Table table) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(STATE)) {
      ps.setString(1, table.tableName());
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          throw new IllegalStateException(table.tableName() + " has no row in postbox_bucket");
        }
        return new State(
            rs.getInt(1), rs.getObject(2, OffsetDateTime.class).toInstant(), rs.getLong(3));
      }
    }
  }

  /** The buckets whose partitions exist, in order. */
  static List<Integer> buckets(Connection c, DatePartitions.Table table) throws SQLException {
    TreeSet<Integer> out = new TreeSet<>();
    String prefix = table.tableName() + "_b";
    try (PreparedStatement ps = c.prepareStatement(PARTITIONS)) {
      ps.setString(1, table.tableName());
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
  }

  /**
   * Creates a bucket's partition as a table of its own and attaches it: CREATE TABLE ... PARTITION
   * OF would take the parent's ACCESS EXCLUSIVE lock and hold every writer back while it waits;
   * ATTACH of an empty table takes SHARE UPDATE EXCLUSIVE, which reads and writes pass.
   */
  static void createPartition(Connection c, DatePartitions.Table table, int bucket)
      throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute(
          "CREATE TABLE "
              + table.partition(bucket)
              + " (LIKE "
              + table.tableName()
              + " INCLUDING DEFAULTS INCLUDING CONSTRAINTS)");
      s.execute(
          "ALTER TABLE "
              + table.tableName()
              + " ATTACH PARTITION "
              + table.partition(bucket)
              + " FOR VALUES FROM ("
              + bucket
              + ") TO ("
              + (bucket + 1)
              + ")");
    }
  }

  /** Whether a bucket's partition exists. */
  static boolean exists(Connection c, DatePartitions.Table table, int bucket) throws SQLException {
    try (PreparedStatement exists = c.prepareStatement(EXISTS)) {
      exists.setString(1, table.partition(bucket));
      try (ResultSet rs = exists.executeQuery()) {
        return rs.next() && rs.getString(1) != null;
      }
    }
  }

  /** Current bucket {@code current} → {@code current + 1}; false if it was not {@code current}. */
  static boolean advance(Connection c, DatePartitions.Table table, int current, Instant now)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(ADVANCE)) {
      ps.setInt(1, current + 1);
      ps.setObject(2, OffsetDateTime.ofInstant(now, ZoneOffset.UTC));
      ps.setString(3, table.tableName());
      ps.setInt(4, current);
      return ps.executeUpdate() == 1;
    }
  }

  /** Locks the parent table as a DROP of its partition needs. */
  static void lockParent(Connection c, DatePartitions.Table table) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute("LOCK TABLE " + table.tableName() + " IN ACCESS EXCLUSIVE MODE");
    }
  }

  static void drop(Connection c, DatePartitions.Table table, int bucket) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute("DROP TABLE " + table.partition(bucket));
    }
  }

  /** The newest time in a bucket's partition (see {@link DatePartitions.Table}); may be null. */
  static Instant latest(Connection c, DatePartitions.Table table, int bucket) throws SQLException {
    try (PreparedStatement ps =
            c.prepareStatement(String.format(table.latestSql(), table.partition(bucket)));
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      OffsetDateTime latest = rs.getObject(1, OffsetDateTime.class);
      return latest == null ? null : latest.toInstant();
    }
  }

  /** Whether a bucket's partition holds rows not settled yet. */
  static boolean holdsUnsettled(Connection c, DatePartitions.Table table, int bucket)
      throws SQLException {
    try (PreparedStatement ps =
            c.prepareStatement(String.format(table.unsettledSql(), table.partition(bucket)));
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getBoolean(1);
    }
  }

  /** Sets the transaction's lock timeout (a constant of {@link DatePartitions}, never input). */
  static void lockTimeout(Connection c, String lockTimeout) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute("SET LOCAL lock_timeout = '" + lockTimeout + "'");
    }
  }
}
