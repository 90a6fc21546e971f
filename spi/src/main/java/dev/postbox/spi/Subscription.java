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
 * @param member the name of the instance this consumer runs in: the same across the instance's
 *     restarts, different for every instance that runs at the same time; or null when there is no
 *     such name. A broker may use it to give a restarted instance its share of the deliveries back
 *     at once, instead of after the broker has noticed the crashed one is gone (Kafka: static group
 *     membership). Brokers without such a notion ignore it.
 */
public record Subscription(String destination, String group, int maxInFlight, String member) {

  /** The {@link #maxInFlight()} of {@link #of(String, String)}. */
  public static final int DEFAULT_MAX_IN_FLIGHT = 1_000;

  /** A subscription without a {@link #member()} name. */
  public Subscription(String destination, String group, int maxInFlight) {
    this(destination, group, maxInFlight, null);
  }

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
    if (member != null && member.isBlank()) {
      throw new IllegalArgumentException("subscription member must be null or not blank");
    }
  }

  /** This subscription, joined under the instance's stable name (see {@link #member()}). */
  public Subscription withMember(String member) {
    return new Subscription(destination, group, maxInFlight, member);
  }

  /** A subscription with {@link #DEFAULT_MAX_IN_FLIGHT}. */
  public static Subscription of(String destination, String group) {
    return new Subscription(destination, group, DEFAULT_MAX_IN_FLIGHT);
  }
}
