package dev.postbox.runtime.relay;

import dev.postbox.runtime.api.Lease;
import dev.postbox.runtime.db.Dialect;
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
 * The lease and instance tables ({@code postbox_lease}, {@code postbox_relay_instance}), in
 * parameterised JDBC on the caller's connection; {@link LeaseManager} decides what to do with them.
 *
 * <p>Every statement that locks lease rows locks them in partition order, as a relay turn does: two
 * transactions that lock rows in one order never wait on each other in a cycle.
 */
final class LeaseRepository {

  private static final String TOUCH_INSTANCE =
      "UPDATE postbox_relay_instance SET heartbeat_at = ? WHERE instance_id = ?";

  /** Renewed row by row through the key, so this is the list, in partition order. */
  private static final String HELD_IN_ORDER =
      "SELECT partition_no FROM postbox_lease WHERE owner = ? AND lease_until > ?"
          + " ORDER BY partition_no";

  private static final String RENEW =
      "UPDATE postbox_lease SET lease_until = ?, heartbeat_at = ?"
          + " WHERE partition_no = ? AND owner = ? AND lease_until > ?";

  private static final String LIVE_INSTANCES =
      "SELECT COUNT(*) FROM postbox_relay_instance WHERE heartbeat_at > ?";

  private static final String FORGET_INSTANCES =
      "DELETE FROM postbox_relay_instance WHERE heartbeat_at < ?";

  private static final String HELD =
      "SELECT partition_no FROM postbox_lease WHERE owner = ? AND lease_until > ?";

  private static final String FREE_FOR_TAKEOVER =
      "SELECT partition_no FROM postbox_lease WHERE owner IS NULL OR lease_until <= ?"
          + " ORDER BY partition_no";

  private static final String TAKE =
      "UPDATE postbox_lease SET owner = ?, lease_until = ?, heartbeat_at = ?,"
          + " version = version + 1 WHERE partition_no = ?";

  private static final String RELEASE =
      "UPDATE postbox_lease SET owner = NULL, lease_until = NULL WHERE partition_no = ? AND owner = ?";

  private static final String LOCK_ALL_HELD =
      "SELECT partition_no FROM postbox_lease WHERE owner = ? ORDER BY partition_no FOR UPDATE";

  private static final String RELEASE_ALL =
      "UPDATE postbox_lease SET owner = NULL, lease_until = NULL WHERE owner = ?";

  private static final String LEAVE = "DELETE FROM postbox_relay_instance WHERE instance_id = ?";

  private static final String ALL_LEASES =
      "SELECT partition_no, owner, lease_until FROM postbox_lease ORDER BY partition_no";

  /** One lease row as the claim reads it, with the database's time of the read. */
  record Row(int partition, String owner, Instant until, Instant dbNow) {}

  private final Dialect dialect;

  LeaseRepository(Dialect dialect) {
    this.dialect = dialect;
  }

  /** Creates the lease rows of partitions 0 to {@code partitions - 1} that do not exist. */
  void ensurePartitions(Connection c, int partitions) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(dialect.insertLeaseIfAbsent())) {
      for (int p = 0; p < partitions; p++) {
        ps.setInt(1, p);
        if (dialect.insertLeaseNeedsKeyTwice()) {
          ps.setInt(2, p);
        }
        ps.addBatch();
      }
      ps.executeBatch();
    }
  }

  /** Records the instance as alive at {@code now}. */
  void touchInstance(Connection c, String instance, Instant now) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(dialect.insertInstanceIfAbsent())) {
      ps.setString(1, instance);
      dialect.bind(ps, 2, now);
      ps.executeUpdate();
    }
    try (PreparedStatement ps = c.prepareStatement(TOUCH_INSTANCE)) {
      dialect.bind(ps, 1, now);
      ps.setString(2, instance);
      ps.executeUpdate();
    }
  }

  /**
   * Renews the instance's unexpired leases until {@code until}, row by row through the key: on
   * InnoDB an UPDATE that scans the table waits for every locked row it meets, such as another
   * instance's lease row locked by a batch of its (paused) owner. The {@code skipped} partitions
   * are not renewed: their leases run out.
   */
  void renew(
      Connection c, String instance, Instant now, Instant until, java.util.Set<Integer> skipped)
      throws SQLException {
    List<Integer> mine = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(HELD_IN_ORDER)) {
      ps.setString(1, instance);
      dialect.bind(ps, 2, now);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          mine.add(rs.getInt(1));
        }
      }
    }
    mine.removeAll(skipped);
    if (mine.isEmpty()) {
      // Prepared only when it runs: an application server's statement cache (Liberty) calls
      // getMoreResults() when it closes a statement, and MariaDB Connector/J throws for one that
      // never ran, which failed every heartbeat.
      return;
    }
    try (PreparedStatement ps = c.prepareStatement(RENEW)) {
      for (int p : mine) {
        dialect.bind(ps, 1, until);
        dialect.bind(ps, 2, now);
        ps.setInt(3, p);
        ps.setString(4, instance);
        dialect.bind(ps, 5, now);
        ps.addBatch();
      }
      ps.executeBatch();
    }
  }

  /** Instances that heartbeated after {@code since}; at least 1. */
  int liveInstances(Connection c, Instant since) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(LIVE_INSTANCES)) {
      dialect.bind(ps, 1, since);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return Math.max(1, rs.getInt(1));
      }
    }
  }

  /** Removes instances whose last heartbeat was before {@code before}. */
  void forgetInstances(Connection c, Instant before) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(FORGET_INSTANCES)) {
      dialect.bind(ps, 1, before);
      ps.executeUpdate();
    }
  }

  /** The partitions whose unexpired lease the instance holds. */
  Set<Integer> held(Connection c, String instance, Instant now) throws SQLException {
    Set<Integer> out = new TreeSet<>();
    try (PreparedStatement ps = c.prepareStatement(HELD)) {
      ps.setString(1, instance);
      dialect.bind(ps, 2, now);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(rs.getInt(1));
        }
      }
    }
    return out;
  }

  /**
   * Locks up to {@code wanted} free or expired lease rows, skipping rows another transaction locks,
   * and returns their partitions.
   */
  List<Integer> lockFree(Connection c, Instant now, int wanted) throws SQLException {
    List<Integer> free = new ArrayList<>();
    try (PreparedStatement ps =
        c.prepareStatement(FREE_FOR_TAKEOVER + dialect.limitSkippingLocked())) {
      dialect.bind(ps, 1, now);
      ps.setInt(2, wanted);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          free.add(rs.getInt(1));
        }
      }
    }
    return free;
  }

  /** Gives the instance the (locked) lease rows of {@code partitions} until {@code until}. */
  void take(
      Connection c, String instance, Collection<Integer> partitions, Instant now, Instant until)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(TAKE)) {
      for (int p : partitions) {
        ps.setString(1, instance);
        dialect.bind(ps, 2, until);
        dialect.bind(ps, 3, now);
        ps.setInt(4, p);
        ps.addBatch();
      }
      ps.executeBatch();
    }
  }

  /** Gives one partition back, if the instance holds it. */
  void release(Connection c, String instance, int partition) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(RELEASE)) {
      ps.setInt(1, partition);
      ps.setString(2, instance);
      ps.executeUpdate();
    }
  }

  /** Gives every partition back (locked first, in partition order) and leaves the instances. */
  void releaseAll(Connection c, String instance) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(LOCK_ALL_HELD)) {
      ps.setString(1, instance);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          rs.getInt(1); // locks only
        }
      }
    }
    try (PreparedStatement ps = c.prepareStatement(RELEASE_ALL)) {
      ps.setString(1, instance);
      ps.executeUpdate();
    }
    try (PreparedStatement ps = c.prepareStatement(LEAVE)) {
      ps.setString(1, instance);
      ps.executeUpdate();
    }
  }

  /**
   * The lease rows of {@code partitions} (not empty), locked in partition order, each with the
   * database's time of the read: leases live in the database's time.
   */
  List<Row> lockRows(Connection c, Collection<Integer> partitions) throws SQLException {
    List<Row> out = new ArrayList<>(partitions.size());
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT partition_no, owner, lease_until, "
                + dialect.now()
                + " AS db_now FROM postbox_lease WHERE partition_no IN (?"
                + ",?".repeat(partitions.size() - 1)
                + ") ORDER BY partition_no FOR UPDATE")) {
      int i = 1;
      for (int p : partitions) {
        ps.setInt(i++, p);
      }
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(
              new Row(
                  rs.getInt("partition_no"),
                  rs.getString("owner"),
                  dialect.read(rs, "lease_until"),
                  dialect.read(rs, "db_now")));
        }
      }
    }
    return out;
  }

  /** Every partition's lease, by partition. */
  List<Lease> all(Connection c) throws SQLException {
    List<Lease> out = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(ALL_LEASES);
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        out.add(new Lease(rs.getInt(1), rs.getString(2), dialect.read(rs, "lease_until")));
      }
    }
    return out;
  }
}
