package dev.postbox.runtime.relay;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The relay's queue of woken partitions, in the order they were woken, and the turns running over
 * them. Not thread-safe: the {@link Relay} calls it holding its turns lock, except {@link
 * #isInFlight}, which the heartbeat reads without it.
 *
 * <p>A partition whose turn is running can be waiting too: it was woken again, and goes in a later
 * turn, never in two turns at once.
 */
final class TurnQueue {

  private final LinkedHashSet<Integer> waiting = new LinkedHashSet<>();
  // written under the relay's lock; the heartbeat reads it unlocked
  private final Set<Integer> inFlight = ConcurrentHashMap.newKeySet();
  // when each running turn began: a turn that takes long (a slow broker call) lets another worker
  // start, so the other partitions do not wait for it
  private final Map<List<Integer>, Long> turnStarts = new IdentityHashMap<>();
  // the worker running each turn, and the turns already reported stuck
  private final Map<List<Integer>, Thread> turnThreads = new IdentityHashMap<>();
  private final Set<List<Integer>> reported =
      java.util.Collections.newSetFromMap(new IdentityHashMap<>());

  /**
   * A turn running for longer than this many leases is stuck (a broker call that never returns):
   * its instance stops renewing the turn's partitions, so another instance takes them over.
   */
  static final int STUCK_LEASES = 3;

  private static final System.Logger LOG = System.getLogger(Relay.class.getName());

  void wake(int partition) {
    waiting.add(partition);
  }

  /** Whether a turn is publishing the partition now. */
  boolean isInFlight(int partition) {
    return inFlight.contains(partition);
  }

  /** Waiting partitions that no running turn holds. */
  int takeable() {
    int n = 0;
    for (int p : waiting) {
      if (!inFlight.contains(p)) {
        n++;
      }
    }
    return n;
  }

  /** Takes up to {@code share} waiting partitions that no other turn is publishing. */
  List<Integer> take(int share, long nowNanos) {
    List<Integer> out = new ArrayList<>();
    Iterator<Integer> it = waiting.iterator();
    while (it.hasNext() && out.size() < share) {
      int p = it.next();
      if (!inFlight.contains(p)) {
        it.remove();
        inFlight.add(p);
        out.add(p);
      }
    }
    if (!out.isEmpty()) {
      turnStarts.put(out, nowNanos);
      turnThreads.put(out, Thread.currentThread()); // the worker takes its own turn
    }
    return out;
  }

  /**
   * The partitions of turns running for longer than {@link #STUCK_LEASES} leases, or all partitions
   * when every worker is in such a turn (none is left to publish the others); the first time a turn
   * is found so, says so with its worker's stack (where the call hangs).
   */
  Set<Integer> stuck(long nowNanos, RelaySettings settings) {
    long stuckNanos = settings.leaseDuration().toNanos() * STUCK_LEASES;
    Set<Integer> out = new java.util.TreeSet<>();
    int[] turns = {0};
    turnStarts.forEach(
        (turn, started) -> {
          if (nowNanos - started <= stuckNanos) {
            return;
          }
          out.addAll(turn);
          turns[0]++;
          if (reported.add(turn)) {
            Thread worker = turnThreads.get(turn);
            Throwable where =
                new Throwable("the stuck turn's worker " + worker + ", where it waits");
            where.setStackTrace(worker != null ? worker.getStackTrace() : new StackTraceElement[0]);
            LOG.log(
                System.Logger.Level.WARNING,
                "a relay turn over outbox partitions "
                    + turn
                    + " has run for "
                    + (nowNanos - started) / 1_000_000
                    + " ms (a broker call that does not return?): this instance stops renewing"
                    + " their leases, so another instance takes them over and publishes their rows;"
                    + " if the turn returns, it marks none of them (the inbox drops the copies)",
                where);
          }
        });
    if (turns[0] >= settings.workerThreads()) {
      for (int p = 0; p < settings.partitions(); p++) {
        out.add(p);
      }
    }
    return out;
  }

  /**
   * A turn ended: {@code first} (partitions it did not reach) go ahead of every other waiting
   * partition, {@code more} (partitions with rows left) behind them; neither once stopped.
   */
  void done(List<Integer> turn, Set<Integer> first, Set<Integer> more, boolean stopped) {
    turnStarts.remove(turn);
    turnThreads.remove(turn);
    reported.remove(turn);
    turn.forEach(inFlight::remove);
    if (stopped) {
      return;
    }
    if (!first.isEmpty()) {
      Set<Integer> behind = new LinkedHashSet<>(waiting);
      waiting.clear();
      waiting.addAll(first);
      waiting.addAll(behind);
    }
    waiting.addAll(more);
  }

  /** Whether a running turn began more than {@code slowNanos} before {@code nowNanos}. */
  boolean aTurnIsSlow(long nowNanos, long slowNanos) {
    for (long started : turnStarts.values()) {
      if (nowNanos - started > slowNanos) {
        return true;
      }
    }
    return false;
  }
}
