package dev.postbox.broker.rabbitmq;

import dev.postbox.spi.Envelope;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.zip.CRC32;

/**
 * How a destination is split into queues: {@code <destination>.<i>} for {@code i} in {@code 0 ..
 * shards-1}, the shard of an envelope being the CRC-32 of its key's UTF-8 bytes modulo the shard
 * count (of its id when it has no key), each with a retry queue {@code <destination>.<i>.retry}.
 * CRC-32 is in every language's standard library, so a producer outside Java can route the same
 * way. The members queue, {@code <destination>.members}, holds no messages: each consumer of the
 * destination holds a consumer on it, and its consumer count is how many instances share the
 * shards.
 */
final class Shards {

  private final RabbitMqSettings settings;

  Shards(RabbitMqSettings settings) {
    this.settings = settings;
  }

  int count() {
    return settings.shards();
  }

  /** The shard queue of an envelope. */
  String queueOf(String destination, Envelope e) {
    return queue(destination, shardOf(e.key() != null ? e.key() : e.id(), settings.shards()));
  }

  static int shardOf(String key, int shards) {
    CRC32 crc = new CRC32();
    crc.update(key.getBytes(StandardCharsets.UTF_8));
    return (int) (crc.getValue() % shards);
  }

  static String queue(String destination, int shard) {
    return destination + "." + shard;
  }

  /**
   * The shard's retry queue: delayed copies come back here from the wait queues, not to the shard's
   * tail, and the shard's holder serves it first (see {@link RetryQueues}).
   */
  static String retryQueue(String shardQueue) {
    return shardQueue + ".retry";
  }

  /** The shard's lock: an exclusive queue, declared by the one connection that holds the shard. */
  static String lockQueue(String shardQueue) {
    return shardQueue + ".lock";
  }

  static String membersQueue(String destination) {
    return destination + ".members";
  }

  /**
   * A shard queue's arguments: its type and, for a quorum queue, a single active consumer, so that
   * consumers outside this adapter also take a shard one at a time. The adapter itself consumes
   * each shard with an exclusive consumer, which RabbitMQ refuses on a classic queue declared with
   * a single active consumer: a classic shard has no such argument, and the exclusive consumer
   * alone keeps it to one consumer.
   */
  Map<String, Object> arguments(int serverMajorVersion) {
    Map<String, Object> args = new HashMap<>();
    args.put("x-queue-type", settings.queueType().argument());
    if (settings.queueType() == RabbitMqSettings.QueueType.QUORUM) {
      args.put("x-single-active-consumer", true);
      if (serverMajorVersion >= 4) {
        // RabbitMQ 4 drops a quorum queue's message after 20 deliveries unless told otherwise;
        // the inbox counts attempts and dead-letters poison itself, so nothing may be dropped.
        args.put("x-delivery-limit", -1);
      }
    }
    return args;
  }

  /** The server's major version, from what it announced when the connection opened. */
  static int majorVersion(com.rabbitmq.client.Connection connection) {
    Object v = connection.getServerProperties().get("version");
    try {
      return v == null ? 0 : Integer.parseInt(v.toString().split("\\.")[0]);
    } catch (NumberFormatException e) {
      return 0;
    }
  }
}
