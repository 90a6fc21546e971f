package dev.postbox.broker.rabbitmq;

import dev.postbox.spi.Envelope;
import dev.postbox.spi.InvalidEventException;
import dev.postbox.spi.WireRules;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * What the RabbitMQ adapter refuses beyond the envelope's own rules.
 *
 * <ul>
 *   <li>A destination longer than {@value #MAX_DESTINATION_BYTES} bytes in UTF-8: a queue name has
 *       at most 255, and the adapter appends the shard and the wait queue's suffix.
 *   <li>A destination starting with {@code amq.}: RabbitMQ reserves those names.
 *   <li>Headers whose total exceeds {@value #MAX_HEADER_BYTES} bytes: AMQP 0-9-1 sends all of a
 *       message's properties in one frame, and RabbitMQ's smallest frame size is 128 KiB.
 * </ul>
 *
 * Header names and values need no other rule: AMQP table keys take the envelope's header names, and
 * its long strings carry any UTF-8 text.
 */
final class RabbitMqWireRules implements WireRules {

  static final RabbitMqWireRules INSTANCE = new RabbitMqWireRules();

  static final int MAX_DESTINATION_BYTES = 200;
  static final int MAX_HEADER_BYTES = 64 * 1024;

  private RabbitMqWireRules() {}

  @Override
  public void checkDestination(String destination) {
    int bytes = destination.getBytes(StandardCharsets.UTF_8).length;
    if (bytes > MAX_DESTINATION_BYTES) {
      throw new InvalidEventException(
          "destination",
          "is "
              + bytes
              + " bytes in UTF-8; RabbitMQ queue names take 255 and the adapter adds its shard"
              + " suffix, so the limit is "
              + MAX_DESTINATION_BYTES);
    }
    if (destination.startsWith("amq.")) {
      throw new InvalidEventException(
          "destination", "starts with 'amq.', a prefix RabbitMQ reserves for its own queues");
    }
  }

  @Override
  public void check(Envelope envelope) {
    long total = 0;
    for (Map.Entry<String, String> h : AmqpHeaders.WIRE.write(envelope).entrySet()) {
      total +=
          h.getKey().getBytes(StandardCharsets.UTF_8).length
              + h.getValue().getBytes(StandardCharsets.UTF_8).length
              + 6;
    }
    if (total > MAX_HEADER_BYTES) {
      throw new InvalidEventException(
          "headers",
          "take "
              + total
              + " bytes on the wire; RabbitMQ sends them in one frame, so the limit is "
              + MAX_HEADER_BYTES);
    }
  }
}
