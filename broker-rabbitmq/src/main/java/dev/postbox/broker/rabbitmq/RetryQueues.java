package dev.postbox.broker.rabbitmq;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/**
 * Delayed redelivery without a plugin. A delivery nacked with a delay is copied into a wait queue
 * of its shard, {@code <shard>.delay.<millis>}, whose message TTL is that delay and whose
 * dead-letter exchange (the default one) routes expired messages back to the shard's retry queue
 * ({@link Shards#retryQueue}), which the shard's holder consumes with the shard and serves first.
 * Not to the shard itself: there a copy would queue up behind the shard's backlog and come back
 * long after it was due, while the inbox holds its key only a few seconds past that. Delays are
 * rounded up to a step of a fixed ladder, so a destination has a few dozen wait queues at most and
 * a copy never comes back sooner than asked. Wait queues are durable and of the shards' type: every
 * message in one has the same TTL, so they expire in order, from the head.
 */
final class RetryQueues {

  /** The longest delay a wait queue holds. */
  static final Duration LONGEST_DELAY = Duration.ofDays(1);

  private static final long[] LADDER_MS = {
    100,
    250,
    500,
    1_000,
    2_000,
    3_000,
    4_000,
    5_000,
    6_000,
    8_000,
    10_000,
    15_000,
    20_000,
    30_000,
    45_000,
    60_000,
    90_000,
    120_000,
    180_000,
    240_000,
    300_000,
    450_000,
    600_000,
    900_000,
    1_200_000,
    1_800_000,
    2_700_000,
    3_600_000,
    7_200_000,
    10_800_000,
    14_400_000,
    21_600_000,
    28_800_000,
    43_200_000,
    86_400_000
  };

  private RetryQueues() {}

  /** The ladder's step for a delay: the shortest one at least as long; positive delays only. */
  static long stepMillis(Duration delay) {
    long ms = delay.toMillis() + (delay.toNanosPart() % 1_000_000 == 0 ? 0 : 1);
    for (long step : LADDER_MS) {
      if (step >= ms) {
        return step;
      }
    }
    return LADDER_MS[LADDER_MS.length - 1];
  }

  static String waitQueue(String shardQueue, long stepMillis) {
    return shardQueue + ".delay." + stepMillis;
  }

  /** The ladder's next step after {@code stepMillis}; the last step stays. */
  static long nextStepMillis(long stepMillis) {
    for (long step : LADDER_MS) {
      if (step > stepMillis) {
        return step;
      }
    }
    return LADDER_MS[LADDER_MS.length - 1];
  }

  /**
   * A wait queue's arguments. Of the shards' type: on quorum queues the dead-lettering is
   * at-least-once (a copy leaves the wait queue only once the retry queue has it), which needs
   * {@code reject-publish} as the overflow behaviour.
   */
  static Map<String, Object> arguments(
      String shardQueue, long stepMillis, RabbitMqSettings settings) {
    Map<String, Object> args = new HashMap<>();
    args.put("x-queue-type", settings.queueType().argument());
    args.put("x-message-ttl", stepMillis);
    args.put("x-dead-letter-exchange", "");
    args.put("x-dead-letter-routing-key", Shards.retryQueue(shardQueue));
    if (settings.queueType() == RabbitMqSettings.QueueType.QUORUM) {
      args.put("x-dead-letter-strategy", "at-least-once");
      args.put("x-overflow", "reject-publish");
    }
    return args;
  }
}
