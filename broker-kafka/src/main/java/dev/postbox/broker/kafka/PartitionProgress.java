package dev.postbox.broker.kafka;

import java.util.NavigableMap;
import java.util.TreeMap;

/**
 * What a consumer owes one partition: the offsets handed out and not yet acked, and so the offset
 * that is safe to commit. Kafka commits are cumulative, so the commit point is the lowest offset
 * still unacked, never the highest acked: an ack out of order can never lose a delivery.
 *
 * <p>Pure logic, confined to the poll thread; no Kafka types, so it is unit-tested on its own.
 *
 * @param <D> what is tracked per in-flight offset (the delivery object)
 */
final class PartitionProgress<D> {

  private final NavigableMap<Long, D> inFlight = new TreeMap<>();
  private long lastCommitted = -1;

  /** Records that the delivery of {@code offset} was handed out. */
  void delivered(long offset, D delivery) {
    inFlight.put(offset, delivery);
  }

  /**
   * Settles {@code offset} if {@code delivery} is still the one in flight for it.
   *
   * @return false when the delivery is stale (already settled, or discarded by a nack or a
   *     rebalance), so the caller ignores it
   */
  boolean settle(long offset, D delivery) {
    return inFlight.remove(offset, delivery);
  }

  /**
   * Discards every in-flight delivery at or after {@code offset}, because the partition is rewound
   * there and they will be delivered again in order.
   *
   * @return the discarded deliveries, in offset order
   */
  java.util.Collection<D> rewindTo(long offset) {
    NavigableMap<Long, D> tail = inFlight.tailMap(offset, true);
    java.util.List<D> dropped = new java.util.ArrayList<>(tail.values());
    tail.clear();
    return dropped;
  }

  /** How many deliveries are in flight. */
  int inFlightCount() {
    return inFlight.size();
  }

  /**
   * The offset to commit: the lowest unacked offset, bounded by {@code nextUnread} (the consumer's
   * position, or the lowest offset fetched but not yet handed out).
   */
  long commitPoint(long nextUnread) {
    return inFlight.isEmpty() ? nextUnread : Math.min(inFlight.firstKey(), nextUnread);
  }

  /**
   * Whether committing {@code point} would move the committed offset forward; if so it is
   * remembered as committed.
   */
  boolean advanceTo(long point) {
    if (point > lastCommitted) {
      lastCommitted = point;
      return true;
    }
    return false;
  }
}
