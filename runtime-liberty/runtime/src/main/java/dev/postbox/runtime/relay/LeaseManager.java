package dev.postbox.runtime.relay;

import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Transactions;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

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
  private final LeaseRepository leases;

  LeaseManager(Transactions tx, Dialect dialect, RelaySettings settings) {
    this.tx = tx;
    this.dialect = dialect;
    this.settings = settings;
    this.leases = new LeaseRepository(dialect);
  }

  /** Creates the lease rows for every partition (idempotent; instances may race). */
  void ensurePartitions() {
    tx.inTransaction(
        c -> {
          leases.ensurePartitions(c, settings.partitions());
          return null;
        });
  }

  /**
   * One heartbeat; returns the partitions this instance holds afterwards. A partition for which
   * {@code busy} is true (a batch of it is being published) is not released to make room for
   * another instance: its rows were claimed, and a new owner would claim them again while this
   * instance still sends them. It goes at a later heartbeat.
   *
   * <p>{@code stuck} partitions (a turn of them hangs in a broker call) are neither renewed nor
   * taken, and while there are any this instance does not count as live: their leases expire,
   * another instance takes them over, and the hung turn, if it returns, is fenced and marks
   * nothing.
   */
  Set<Integer> heartbeat(java.util.function.IntPredicate busy, Set<Integer> stuck) {
    Instant now = tx.inTransaction(dialect::databaseNow);
    Instant until = now.plus(settings.leaseDuration());
    String me = settings.instanceId();
    int live =
        tx.inTransaction(
            c -> {
              if (stuck.isEmpty()) {
                // An instance with a hung turn does not count as live: the others' shares grow to
                // cover the partitions it lets go.
                leases.touchInstance(c, me, now);
              }
              leases.renew(c, me, now, until, stuck);
              return leases.liveInstances(c, now.minus(settings.leaseDuration()));
            });
    int share = (settings.partitions() + Math.max(1, live) - 1) / Math.max(1, live);
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
      takeOver(share - owned.size(), now, until, stuck);
    }
    tx.inTransaction(
        c -> {
          leases.forgetInstances(c, now.minus(settings.leaseDuration().multipliedBy(10)));
          return null;
        });
    return owned(now);
  }

  Set<Integer> owned(Instant now) {
    return tx.inTransaction(c -> leases.held(c, settings.instanceId(), now));
  }

  /**
   * Takes up to {@code wanted} free or expired partitions in one short transaction. Rows locked by
   * another transaction are skipped, never waited for: a previous owner's batch holds its lease row
   * for a moment (it is taken at the next heartbeat), and an owner paused inside that transaction
   * (GC, SIGSTOP) holds it until it wakes; waiting would stall every other takeover, and this
   * instance's own renewals, for as long as the pause lasts. Two instances taking over at once get
   * different rows.
   */
  private void takeOver(int wanted, Instant now, Instant until, Set<Integer> stuck) {
    tx.inTransaction(
        c -> {
          List<Integer> free = leases.lockFree(c, now, wanted);
          free.removeAll(stuck); // not while a turn of this instance hangs holding them
          if (!free.isEmpty()) { // nothing prepared that would not run (see the renewal)
            leases.take(c, settings.instanceId(), free, now, until);
          }
          return null;
        });
  }

  void release(int partition) {
    tx.inTransaction(
        c -> {
          leases.release(c, settings.instanceId(), partition);
          return null;
        });
  }

  /** Gives every partition back and leaves the instance table: a graceful stop. */
  void releaseAll() {
    tx.inTransaction(
        c -> {
          // Locked first in partition order, as a turn locks them: never a cycle with a turn
          // still running after close's wait gave up.
          leases.releaseAll(c, settings.instanceId());
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
    for (LeaseRepository.Row row : leases.lockRows(c, partitions)) {
      Instant until = row.until();
      Instant now = row.dbNow();
      if (!settings.instanceId().equals(row.owner()) || until == null || !until.isAfter(now)) {
        continue;
      }
      out.put(row.partition(), until.isAfter(now.plus(settings.leaseDuration().dividedBy(4))));
    }
    return out;
  }
}
