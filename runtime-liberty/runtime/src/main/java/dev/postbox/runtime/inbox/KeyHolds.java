package dev.postbox.runtime.inbox;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * Per-key order through failures, across polls: a key whose event failed is held behind that event,
 * and its later events are sent back to come after it. The hold lasts until the failed event is
 * done and every event sent back behind it has come back: an event of the key that arrives
 * meanwhile is sent back behind them too. Lanes run in parallel, so this is safe for concurrent
 * use.
 */
final class KeyHolds {

  /** Keys held behind a failed event, across polls (lanes run in parallel: concurrent). */
  private final Map<String, Hold> holds = new ConcurrentHashMap<>();

  /**
   * A key held behind its failed event ({@code eventId}, due back at {@code dueNanos}; null once it
   * is done) and the events sent back behind it that have not come back yet ({@code away}: id to
   * when it is due back).
   */
  private record Hold(
      String eventId, long dueNanos, AtomicLong lastDueNanos, Map<String, Long> away) {

    Hold headless() {
      return new Hold(null, dueNanos, lastDueNanos, away);
    }

    /** Whether the failed event is done, or was due back too long ago (another consumer has it). */
    boolean headGone(long now) {
      return eventId == null || now - dueNanos > HOLD_GRACE.toNanos();
    }

    /** Forgets followers due back too long ago: another consumer has them. */
    void forgetLate(long now) {
      away.values().removeIf(due -> now - due > HOLD_GRACE.toNanos());
    }

    /** Whether nothing is left to wait for: the failed event is done and every follower is back. */
    boolean over(long now) {
      forgetLate(now);
      return headGone(now) && away.isEmpty();
    }
  }

  /** How far apart a held key's events are sent back, so each returns after the one before. */
  static final long SPACING_NANOS = Duration.ofMillis(50).toNanos();

  /** How long after its event was due a hold lasts without seeing it. */
  static final Duration HOLD_GRACE = Duration.ofSeconds(5);

  private final Duration maxDelay;

  private final LongSupplier nanoTime;

  /**
   * @param maxDelay the longest delay a delivery is ever nacked with (the retry policy's)
   */
  KeyHolds(Duration maxDelay) {
    this(maxDelay, System::nanoTime);
  }

  KeyHolds(Duration maxDelay, LongSupplier nanoTime) {
    this.maxDelay = maxDelay;
    this.nanoTime = nanoTime;
  }

  /** Whether the event is the one its key is held behind: it goes the usual way. */
  boolean isHeadOfHold(Item item) {
    String key = item.envelope.key();
    Hold h = key == null ? null : holds.get(key);
    return h != null && item.envelope.id().equals(h.eventId);
  }

  /** The delay that sends an event back a little after one due back in {@code earlier}. */
  Duration after(Duration earlier) {
    return atMostMaxDelay(earlier.plusNanos(SPACING_NANOS));
  }

  /**
   * A key whose event failed is held until that event is back and done: the key's other events that
   * arrive meanwhile, in this poll or a later one, are nacked to come back a little after it (50 ms
   * more per place), so none overtakes it on brokers that redeliver by delay. Once the failed event
   * is done, the events sent back behind it pass as they come back, and a new event of the key
   * still goes behind them. A hold ends when its event is acknowledged (processed or dead-lettered)
   * and its followers are back, or a few seconds after they were due back without coming (they went
   * to another consumer).
   */
  List<Item> holdBack(List<Item> items) {
    if (holds.isEmpty()) {
      return items;
    }
    long now = nanoTime.getAsLong();
    Map<String, Item> headsHere = new HashMap<>();
    Map<String, Hold> heldHere = new HashMap<>();
    for (Item item : items) {
      String key = item.envelope.key();
      Hold h = key == null ? null : holds.get(key);
      if (h != null && item.envelope.id().equals(h.eventId) && !headsHere.containsKey(key)) {
        headsHere.put(key, item);
        heldHere.put(key, h);
      }
    }
    List<Item> free = new ArrayList<>(items.size());
    Set<String> headPlaced = new HashSet<>();
    for (Item item : items) {
      String key = item.envelope.key();
      Item head = key == null ? null : headsHere.get(key);
      if (head != null) {
        if (headPlaced.add(key)) {
          placeWithHead(head, items, heldHere.get(key), now, free);
        }
        continue;
      }
      Hold h = key == null ? null : holds.get(key);
      if (h != null && h.over(now)) {
        holds.remove(key, h);
        h = null;
      }
      if (h == null) {
        free.add(item);
        continue;
      }
      if (h.eventId != null && h.headGone(now)) {
        Hold headless = h.headless(); // its event went to another consumer: its followers go on
        holds.replace(key, h, headless);
        h = headless;
      }
      if (h.eventId == null && h.away.remove(item.envelope.id()) != null) {
        free.add(item); // a follower back after its head was done: in its place
        continue;
      }
      sendBack(item, h, now); // after the head and every follower sent back: the key's order
    }
    return free;
  }

  /**
   * The head is here: it goes first among its key's events in this poll (a follower can come back
   * before its head, its copy was late), then the followers that came back with it, in the poll's
   * order (on Kafka the offsets' order: not the order of their delays, which a re-sent follower can
   * have out of place), and the key's new events after them, or behind the followers still away.
   * The lane keeps list order.
   */
  private void placeWithHead(Item head, List<Item> items, Hold h, long now, List<Item> free) {
    String key = head.envelope.key();
    free.add(head);
    List<Item> back = new ArrayList<>();
    List<Item> fresh = new ArrayList<>();
    for (Item item : items) {
      if (item != head && key.equals(item.envelope.key())) {
        (h.away.containsKey(item.envelope.id()) ? back : fresh).add(item);
      }
    }
    back.forEach(i -> h.away.remove(i.envelope.id()));
    free.addAll(back);
    h.forgetLate(now);
    for (Item item : fresh) {
      if (h.away.isEmpty()) {
        free.add(item);
      } else {
        sendBack(item, h, now);
      }
    }
  }

  /** Nacks a held key's event to come back after every one sent back before it. */
  private void sendBack(Item item, Hold h, long now) {
    long due = h.lastDueNanos.accumulateAndGet(now, (last, t) -> Math.max(last, t) + SPACING_NANOS);
    Duration delay = atMostMaxDelay(Duration.ofNanos(due - now));
    h.away.put(item.envelope.id(), now + delay.toNanos());
    item.delivery.nack(delay);
  }

  /**
   * After a lane: a key whose event was nacked is held behind the first such event, the lane's
   * other nacked events of the key joining its followers; a hold whose event was acknowledged
   * (processed or dead-lettered) waits only for its followers, and ends once they are back.
   */
  void update(List<Item> items) {
    long now = nanoTime.getAsLong();
    if (holds.size() > 10_000) {
      // keys not seen again since their hold ended: forget them
      holds.entrySet().removeIf(e -> e.getValue().over(now));
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
      Hold old = holds.get(key);
      Item failed = firstNacked.get(key);
      if (failed != null) {
        Duration delay = failed.delivery.nackDelay();
        long lastDue = now + delay.toNanos();
        Map<String, Long> away = new ConcurrentHashMap<>();
        if (old != null) {
          away.putAll(old.away);
          lastDue = Math.max(lastDue, old.lastDueNanos.get());
        }
        for (Item item : items) {
          Duration d = item.delivery.nackDelay();
          if (key.equals(item.envelope.key()) && d != null && item != failed) {
            lastDue = Math.max(lastDue, now + d.toNanos()); // the lane's own followers
            away.put(item.envelope.id(), now + d.toNanos());
          } else if (key.equals(item.envelope.key())) {
            away.remove(item.envelope.id());
          }
        }
        holds.put(
            key,
            new Hold(failed.envelope.id(), now + delay.toNanos(), new AtomicLong(lastDue), away));
      } else if (old != null) {
        ackedIds.forEach(old.away::remove);
        Hold after = old.eventId != null && ackedIds.contains(old.eventId) ? old.headless() : old;
        if (after.over(now)) {
          holds.remove(key, old);
        } else if (after != old) {
          holds.replace(key, old, after);
        }
      }
    }
  }

  private Duration atMostMaxDelay(Duration d) {
    Duration max = maxDelay;
    return d.compareTo(max) > 0 ? max : d;
  }
}
