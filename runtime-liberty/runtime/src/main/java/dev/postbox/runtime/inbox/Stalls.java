package dev.postbox.runtime.inbox;

import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * Whether a subscription moves: every delivery is watched from the poll that brought it until it is
 * acknowledged. One that is nacked and comes back, or is never settled at all, keeps the time it
 * was first seen; {@link #stuckFor()} is the age of the oldest such delivery. So a message that is
 * retried for ever (Kafka re-reading the same batch, Artemis or SQS redelivering it) shows, however
 * many other deliveries are acknowledged around it.
 *
 * <p>Only a delivery seen within {@code activeWithin} counts (it keeps coming back here); one not
 * seen for that long went to another consumer (a rebalance, a competing consumer) or the broker
 * gave it up, and is forgotten. {@code activeWithin} must be longer than the longest nack delay, or
 * a delivery nacked for that long is forgotten before it returns.
 */
final class Stalls {

  private final long activeNanos;
  private final LongSupplier nanoTime;
  private final Map<String, long[]> open = new ConcurrentHashMap<>(); // {first seen, last seen}
  private static final int MAX_WATCHED = 100_000;

  public Stalls(Duration activeWithin, LongSupplier nanoTime) {
    this.activeNanos = activeWithin.toNanos();
    this.nanoTime = nanoTime;
  }

  /** Watches a poll's deliveries; returns them {@link Tracked}, so that their acks are seen. */
  public List<Delivery> watch(List<Delivery> batch) {
    long now = nanoTime.getAsLong();
    if (open.size() > MAX_WATCHED) {
      forget(now);
    }
    return batch.stream()
        .<Delivery>map(
            d -> {
              String id = identity(d);
              open.compute(
                  id, (k, seen) -> seen == null ? new long[] {now, now} : touch(seen, now));
              return Tracked.watched(d, () -> open.remove(id));
            })
        .toList();
  }

  /** How long the oldest delivery has waited for an acknowledgement, or empty if none waits. */
  public Optional<Duration> stuckFor() {
    long now = nanoTime.getAsLong();
    forget(now);
    long oldest = Long.MAX_VALUE;
    for (long[] seen : open.values()) {
      oldest = Math.min(oldest, seen[0]);
    }
    return oldest == Long.MAX_VALUE
        ? Optional.empty()
        : Optional.of(Duration.ofNanos(now - oldest));
  }

  private void forget(long now) {
    // Removes an entry only if it is still the one tested: one re-seen meanwhile stays.
    open.values().removeIf(seen -> now - seen[1] > activeNanos);
  }

  private static long[] touch(long[] seen, long now) {
    return new long[] {seen[0], now};
  }

  /** The event id when it can be read, else the broker's position of the message. */
  private static String identity(Delivery d) {
    try {
      Envelope e = d.envelope();
      return "id:" + e.id();
    } catch (RuntimeException malformed) {
      return "at:" + d.metadata();
    }
  }
}
