package dev.postbox.runtime.inbox;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Per-key order through failures, across polls: a key whose event failed is held behind that event,
 * and its later events are sent back to come after it. Lanes run in parallel, so this is safe for
 * concurrent use.
 */
final class KeyHolds {

  /** Keys held behind a failed event, across polls (lanes run in parallel: concurrent). */
  private final Map<String, Hold> holds = new java.util.concurrent.ConcurrentHashMap<>();

  /** A key held behind its failed event, until that event is due back. */
  private record Hold(
      String eventId, long dueNanos, java.util.concurrent.atomic.AtomicLong lastDueNanos) {}

  /** How far apart a held key's events are sent back, so each returns after the one before. */
  static final long SPACING_NANOS = Duration.ofMillis(50).toNanos();

  /** How long after its event was due a hold lasts without seeing it. */
  private static final Duration HOLD_GRACE = Duration.ofSeconds(5);

  private final Duration maxDelay;

  /**
   * @param maxDelay the longest delay a delivery is ever nacked with (the retry policy's)
   */
  KeyHolds(Duration maxDelay) {
    this.maxDelay = maxDelay;
  }

  /** Whether the event is the one its key is held behind: it goes the usual way. */
  boolean isHeadOfHold(Item item) {
    String key = item.envelope.key();
    Hold h = key == null ? null : holds.get(key);
    return h != null && h.eventId.equals(item.envelope.id());
  }

  /** The delay that sends an event back a little after one due back in {@code earlier}. */
  Duration after(Duration earlier) {
    return atMostMaxDelay(earlier.plusNanos(SPACING_NANOS));
  }

  /**
   * A key whose event failed is held until that event is back and done: the key's other events that
   * arrive meanwhile, in this poll or a later one, are nacked to come back a little after it (50 ms
   * more per place), so none overtakes it on brokers that redeliver by delay. A hold ends when its
   * event is acknowledged (processed or dead-lettered), or a few seconds after it was due back
   * without coming (it went to another consumer).
   */
  List<Item> holdBack(List<Item> items) {
    if (holds.isEmpty()) {
      return items;
    }
    long now = System.nanoTime();
    Map<String, Item> headsHere = new HashMap<>();
    for (Item item : items) {
      String key = item.envelope.key();
      Hold h = key == null ? null : holds.get(key);
      if (h != null && h.eventId.equals(item.envelope.id())) {
        headsHere.putIfAbsent(key, item);
      }
    }
    List<Item> free = new ArrayList<>(items.size());
    Set<String> headPlaced = new HashSet<>();
    for (Item item : items) {
      String key = item.envelope.key();
      Item head = key == null ? null : headsHere.get(key);
      if (head != null) {
        // The head goes first among its key's events here: a follower sent back behind it can
        // come back before it (its copy was late) in the same poll, and the lane keeps list order.
        if (headPlaced.add(key)) {
          free.add(head);
        }
        if (item != head) {
          free.add(item);
        }
        continue;
      }
      Hold h = key == null ? null : holds.get(key);
      if (h != null && now - h.dueNanos > HOLD_GRACE.toNanos()) {
        holds.remove(key, h); // its event did not come back here: another consumer has it
        h = null;
      }
      if (h == null) {
        free.add(item);
        continue;
      }
      // after the head and after every follower already sent back: the key keeps its order
      long due =
          h.lastDueNanos.accumulateAndGet(now, (last, t) -> Math.max(last, t) + SPACING_NANOS);
      item.delivery.nack(atMostMaxDelay(Duration.ofNanos(due - now)));
    }
    return free;
  }

  /**
   * After a lane: a key whose event was nacked is held behind the first such event; a hold whose
   * event was acknowledged (processed or dead-lettered) ends.
   */
  void update(List<Item> items) {
    long now = System.nanoTime();
    if (holds.size() > 10_000) {
      // keys not seen again since their hold ended: forget them
      holds.values().removeIf(h -> now - h.dueNanos > HOLD_GRACE.toNanos());
    }
    Map<String, Item> firstNacked = new HashMap<>();
    Set<String> ackedIds = new HashSet<>();
    Set<String> keys = new HashSet<>();
    for (Item item : items) {
      String key = item.envelope.key();
      if (key == null) {
        continue;
      }
      keys.add(key);
      Tracked d = item.delivery;
      if (d.nackDelay() != null) {
        firstNacked.putIfAbsent(key, item);
      } else if (d.acked()) {
        ackedIds.add(item.envelope.id());
      }
    }
    for (String key : keys) {
      Item failed = firstNacked.get(key);
      if (failed != null) {
        Duration delay = failed.delivery.nackDelay();
        long lastDue = now + delay.toNanos();
        for (Item item : items) {
          Duration d = item.delivery.nackDelay();
          if (key.equals(item.envelope.key()) && d != null) {
            lastDue = Math.max(lastDue, now + d.toNanos()); // the lane's own followers
          }
        }
        holds.put(
            key,
            new Hold(
                failed.envelope.id(),
                now + delay.toNanos(),
                new java.util.concurrent.atomic.AtomicLong(lastDue)));
      } else {
        Hold h = holds.get(key);
        if (h != null && ackedIds.contains(h.eventId)) {
          holds.remove(key, h);
        }
      }
    }
  }

  private Duration atMostMaxDelay(Duration d) {
    Duration max = maxDelay;
    return d.compareTo(max) > 0 ? max : d;
  }
}
