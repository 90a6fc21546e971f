package dev.postbox.broker.kafka;

import dev.postbox.spi.InvalidEventException;
import dev.postbox.spi.WireRules;
import java.util.regex.Pattern;

/**
 * What Kafka refuses beyond the envelope's own rules: topic names other than 1 to 249 of ASCII
 * letters, digits, '.', '_' and '-' (Kafka's {@code Topic.validate}), and "." and "..". The
 * record's key and headers fit in {@link KafkaSettings#RECORD_OVERHEAD_BYTES} by the envelope's
 * limits, and the payload is checked against {@code max.message.bytes} by the capabilities.
 */
final class KafkaWireRules implements WireRules {

  static final KafkaWireRules INSTANCE = new KafkaWireRules();

  private static final Pattern TOPIC = Pattern.compile("[a-zA-Z0-9._-]{1,249}");

  private KafkaWireRules() {}

  @Override
  public void checkDestination(String topic) {
    if (!TOPIC.matcher(topic).matches() || topic.equals(".") || topic.equals("..")) {
      throw new InvalidEventException(
          "destination",
          "is not a Kafka topic name: use 1 to 249 ASCII letters, digits, '.', '_' and '-'");
    }
  }
}
