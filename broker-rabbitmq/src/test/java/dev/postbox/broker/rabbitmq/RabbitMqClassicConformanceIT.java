package dev.postbox.broker.rabbitmq;

import java.util.Map;

/** The conformance suite again on classic queues, whose attempts are counted by the adapter. */
class RabbitMqClassicConformanceIT extends RabbitMqConformanceIT {
  @Override
  protected Map<String, String> variant() {
    return Map.of("claim.interval", "200ms", "queue.type", "classic");
  }
}
