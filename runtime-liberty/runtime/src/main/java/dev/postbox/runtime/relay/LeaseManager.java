package dev.postbox.runtime.relay;

import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Transactions;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Time-boxed partition leases in {@code postbox_lease}, shared fairly among live instances.
 *
 * <p>Each heartbeat: record this instance as alive, renew its unexpired leases, then move toward a
 * fair share (ceil(P / live instances)): release extras, or take free and expired partitions whose
 * rows it can lock at once ({@code FOR UPDATE SKIP LOCKED}), so two instances can never both win
 * one and none waits on another's lock. A lease always expires: an instance that stops heartbeating
 * loses its partitions after the lease duration.
 *
 * <p>Every lease time is the database's ({@link Dialect#databaseNow}), never an instance's own
 * clock: instances whose clocks disagree, by more than a lease even, still agree on who is alive
 * and when a lease ends.
 */
final class LeaseManager {

  private final Transactions tx;
  private final Dialect dialect;
  private final RelaySettings settings;

  LeaseManager(Transactions tx, Dialect dialect, RelaySettings settings) {
    this.tx = tx;
    this.dialect = dialect;
    this.settings = settings;
  }

  /** Creates the lease rows for every partition (idempotent; instances may race). */
  void ensurePartitions() {
    tx.inTransaction(
        c -> {
          try (PreparedStatement ps = c.prepareStatement(dialect.insertLeaseIfAbsent())) {
            for (int p = 0; p < settings.partitions(); p++) {
              ps.setInt(1, p);
              if (dialect.insertLeaseNeedsKeyTwice()) {
                ps.setInt(2, p);
              }
              ps.addBatch();
            }
            ps.executeBatch();
          }
          return null;
        });
  }

  /** One heartbeat; returns the partitions this instance holds afterwards. */
  Set<Integer> heartbeat() {
    return heartbeat(p -> false);
  }

  /**
   * One heartbeat; returns the partitions this instance holds afterwards. A partition for which
   * {@code busy} is true (a batch of it is being published) is not released to make room for
   * another instance: its rows were claimed, and a new owner would claim them again while this
   * instance still sends them. It goes at a later heartbeat.
   */
  Set<Integer> heartbeat(java.util.function.IntPredicate busy) {
    Instant now = tx.inTransaction(dialect::databaseNow);
    Instant until = now.plus(settings.leaseDuration());
    String me = settings.instanceId();
    int live =
        tx.inTransaction(
            c -> {
              try (PreparedStatement ps = c.prepareStatement(dialect.insertInstanceIfAbsent())) {
                ps.setString(1, me);
                dialect.bind(ps, 2, now);
                ps.executeUpdate();
              }
              try (PreparedStatement ps =
                  c.prepareStatement(
                      "UPDATE postbox_relay_instance SET heartbeat_at = ? WHERE instance_id = ?")) {
                dialect.bind(ps, 1, now);
                ps.setString(2, me);
                ps.executeUpdate();
              }
              // Renewed row by row through the key: on InnoDB an UPDATE that scans the table
              // waits for every locked row it meets, such as another instance's lease row locked
              // by a batch of its (paused) owner.
              List<Integer> mine = new ArrayList<>();
              try (PreparedStatement ps =
                  c.prepareStatement(
                      // In partition order, as a relay turn locks its partitions' rows: two
                      // transactions that lock rows in one order never wait on each other in a
                      // cycle.
                      "SELECT partition_no FROM postbox_lease WHERE owner = ? AND lease_until > ?"
                          + " ORDER BY partition_no")) {
                ps.setString(1, me);
                dialect.bind(ps, 2, now);
                try (ResultSet rs = ps.executeQuery()) {
                  while (rs.next()) {
                    mine.add(rs.getInt(1));
                  }
                }
              }
              // Prepared only when it runs: an application server's statement cache (Liberty)
              // calls getMoreResults() when it closes a statement, and MariaDB Connector/J throws
              // for one that never ran, which failed every heartbeat.
              if (!mine.isEmpty()) {
                try (PreparedStatement ps =
                    c.prepareStatement(
                        "UPDATE postbox_lease SET lease_until = ?, heartbeat_at = ?"
                            + " WHERE partition_no = ? AND owner = ? AND lease_until > ?")) {
                  for (int p : mine) {
                    dialect.bind(ps, 1, until);
                    dialect.bind(ps, 2, now);
                    ps.setInt(3, p);
                    ps.setString(4, me);
                    dialect.bind(ps, 5, now);
                    ps.addBatch();
                  }
                  ps.executeBatch();
                }
              }
              try (PreparedStatement ps =
                  c.prepareStatement(
                      "SELECT COUNT(*) FROM postbox_relay_instance WHERE heartbeat_at > ?")) {
                dialect.bind(ps, 1, now.minus(settings.leaseDuration()));
                try (ResultSet rs = ps.executeQuery()) {
                  rs.next();
                  return Math.max(1, rs.getInt(1));
                }
              }
            });
    int share = (settings.partitions() + live - 1) / live;
    Set<Integer> owned = owned(now);
    if (owned.size() > share) {
      List<Integer> extras = new ArrayList<>(owned);
      Collections.reverse(extras);
      int surplus = owned.size() - share;
      for (int p : extras) {
        if (surplus == 0) {
          break;
        }
        if (!busy.test(p)) {
          release(p);
          surplus--;
        }
      }
    } else if (owned.size() < share) {
      takeOver(share - owned.size(), now, until);
    }
    tx.inTransaction(
        c -> {
          try (PreparedStatement ps =
              c.prepareStatement("DELETE FROM postbox_relay_instance WHERE heartbeat_at < ?")) {
            dialect.bind(ps, 1, now.minus(settings.leaseDuration().multipliedBy(10)));
            ps.executeUpdate();
          }
          return null;
        });
    return owned(now);
  }

  Set<Integer> owned(Instant now) {
    return tx.inTransaction(
        c -> {
          Set<Integer> out = new TreeSet<>();
          try (PreparedStatement ps =
              c.prepareStatement(
                  "SELECT partition_no FROM postbox_lease WHERE owner = ? AND lease_until > ?")) {
            ps.setString(1, settings.instanceId());
            dialect.bind(ps, 2, now);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                out.add(rs.getInt(1));
              }
            }
          }
          return out;
        });
  }

  /**
   * Takes up to {@code wanted} free or expired partitions in one short transaction. Rows locked by
   * another transaction are skipped, never waited for: a previous owner's batch holds its lease row
   * for a moment (it is taken at the next heartbeat), and an owner paused inside that transaction
   * (GC, SIGSTOP) holds it until it wakes; waiting would stall every other takeover, and this
   * instance's own renewals, for as long as the pause lasts. Two instances taking over at once get
   * different rows.
   */
  private void takeOver(int wanted, Instant now, Instant until) {
    tx.inTransaction(
        c -> {
          List<Integer> free = new ArrayList<>();
          try (PreparedStatement ps =
              c.prepareStatement(
                  "SELECT partition_no FROM postbox_lease WHERE owner IS NULL OR lease_until <= ?"
                      + " ORDER BY partition_no "
                      + dialect.limit()
                      + " FOR UPDATE SKIP LOCKED")) {
            dialect.bind(ps, 1, now);
            ps.setInt(2, wanted);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                free.add(rs.getInt(1));
              }
            }
          }
          if (free.isEmpty()) {
            return null; // nothing prepared that would not run (see the renewal above)
          }
          try (PreparedStatement ps =
              c.prepareStatement(
                  "UPDATE postbox_lease SET owner = ?, lease_until = ?, heartbeat_at = ?,"
                      + " version = version + 1 WHERE partition_no = ?")) {
            for (int p : free) {
              ps.setString(1, settings.instanceId());
              dialect.bind(ps, 2, until);
              dialect.bind(ps, 3, now);
              ps.setInt(4, p);
              ps.addBatch();
            }
            ps.executeBatch();
          }
          return null;
        });
  }

  void release(int partition) {
    tx.inTransaction(
        c -> {
          try (PreparedStatement ps =
              c.prepareStatement(
                  "UPDATE postbox_lease SET owner = NULL, lease_until = NULL WHERE partition_no = ? AND owner = ?")) {
            ps.setInt(1, partition);
            ps.setString(2, settings.instanceId());
            ps.executeUpdate();
          }
          return null;
        });
  }

  /** Gives every partition back and leaves the instance table: a graceful stop. */
  void releaseAll() {
    tx.inTransaction(
        c -> {
          // Locked first in partition order, as a turn locks them: never a cycle with a turn
          // still running after close's wait gave up.
          try (PreparedStatement ps =
              c.prepareStatement(
                  "SELECT partition_no FROM postbox_lease WHERE owner = ? ORDER BY partition_no"
                      + " FOR UPDATE")) {
            ps.setString(1, settings.instanceId());
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                rs.getInt(1); // locks only
              }
            }
          }
          try (PreparedStatement ps =
              c.prepareStatement(
                  "UPDATE postbox_lease SET owner = NULL, lease_until = NULL WHERE owner = ?")) {
            ps.setString(1, settings.instanceId());
            ps.executeUpdate();
          }
          try (PreparedStatement ps =
              c.prepareStatement("DELETE FROM postbox_relay_instance WHERE instance_id = ?")) {
            ps.setString(1, settings.instanceId());
            ps.executeUpdate();
          }
          return null;
        });
  }

  /**
   * Whether this instance holds the partition's lease (locking its row, so a takeover skips it
   * until the claim or settle commits): true with at least a quarter of the lease left, false with
   * less (the heartbeat is late), null if another instance holds it or it expired.
   */
  Boolean holdsWithTimeToSpare(Connection c, int partition) throws SQLException {
    return holdsWithTimeToSpare(c, List.of(partition)).get(partition);
  }

  /**
   * {@link #holdsWithTimeToSpare(Connection, int)} for several partitions in one statement, which
   * locks their lease rows in partition order (as the heartbeat renews them, so neither waits on
   * the other in a cycle). A partition this instance does not hold is absent from the map.
   */
  Map<Integer, Boolean> holdsWithTimeToSpare(Connection c, Collection<Integer> partitions)
      throws SQLException {
    Map<Integer, Boolean> out = new HashMap<>();
    if (partitions.isEmpty()) {
      return out;
    }
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT partition_no, owner, lease_until, "
                + dialect.now()
                + " AS db_now FROM postbox_lease WHERE partition_no IN ("
                + "?"
                + ",?".repeat(partitions.size() - 1)
                + ") ORDER BY partition_no FOR UPDATE")) {
      int i = 1;
      for (int p : partitions) {
        ps.setInt(i++, p);
      }
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          Instant until = dialect.read(rs, "lease_until");
          Instant now = dialect.read(rs, "db_now"); // leases live in the database's time
          if (!settings.instanceId().equals(rs.getString("owner"))
              || until == null
              || !until.isAfter(now)) {
            continue;
          }
          out.put(
              rs.getInt("partition_no"),
              until.isAfter(now.plus(settings.leaseDuration().dividedBy(4))));
        }
      }
    }
    return out;
  }
}
