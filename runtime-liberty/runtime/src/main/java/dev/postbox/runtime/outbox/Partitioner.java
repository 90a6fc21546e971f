package dev.postbox.runtime.outbox;

/**
 * Maps an event to one of P outbox partitions. A key always lands in the same partition, which one
 * relay instance publishes at a time, in id order: that is how per-key order holds across
 * instances. {@link String#hashCode()} is specified by the JLS, so every instance agrees.
 */
public final class Partitioner {

  private Partitioner() {}

  /** The partition of a key; events without a key spread by their id. */
  public static int partition(String key, String eventId, int partitions) {
    String basis = key != null ? key : eventId;
    return Math.floorMod(basis.hashCode(), partitions);
  }
}
