package dev.postbox.spi;

/**
 * Where a consumer reads from, and with whom it shares the work.
 *
 * @param destination the destination's name; never blank
 * @param group the consumer group: consumers with the same group share the deliveries, each
 *     delivery going to one of them (Kafka group id, JMS shared durable subscription name, for an
 *     SQS queue a label only, because the queue itself is the group); never blank
 * @param maxInFlight how many deliveries one consumer may hold unsettled; when it holds that many,
 *     {@link Consumer#poll} returns nothing until some are settled. Bounds memory and the
 *     redelivery blast radius of a crash.
 */
public record Subscription(String destination, String group, int maxInFlight) {

  /** The {@link #maxInFlight()} of {@link #of(String, String)}. */
  public static final int DEFAULT_MAX_IN_FLIGHT = 1_000;

  public Subscription {
    if (destination == null || destination.isBlank()) {
      throw new IllegalArgumentException("subscription destination must not be blank");
    }
    if (group == null || group.isBlank()) {
      throw new IllegalArgumentException("subscription group must not be blank");
    }
    if (maxInFlight < 1) {
      throw new IllegalArgumentException("subscription maxInFlight must be >= 1: " + maxInFlight);
    }
  }

  /** A subscription with {@link #DEFAULT_MAX_IN_FLIGHT}. */
  public static Subscription of(String destination, String group) {
    return new Subscription(destination, group, DEFAULT_MAX_IN_FLIGHT);
  }
}
