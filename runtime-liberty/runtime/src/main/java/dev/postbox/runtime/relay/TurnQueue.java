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
    }
    return out;
  }

  /**
   * A turn ended: {@code first} (partitions it did not reach) go ahead of every other waiting
   * partition, {@code more} (partitions with rows left) behind them; neither once stopped.
   */
  void done(List<Integer> turn, Set<Integer> first, Set<Integer> more, boolean stopped) {
    turnStarts.remove(turn);
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
