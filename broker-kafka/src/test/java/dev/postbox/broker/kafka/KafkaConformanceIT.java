package dev.postbox.broker.kafka;

import dev.postbox.broker.kafka.testing.KafkaTestBroker;
import dev.postbox.spi.Broker;
import dev.postbox.spi.Brokers;
import dev.postbox.spi.testing.BrokerConformanceSuite;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;

/** The whole conformance suite against a real KRaft broker. */
class KafkaConformanceIT extends BrokerConformanceSuite {

  private static final KafkaTestBroker KAFKA = KafkaTestBroker.shared();

  @Override
  protected Broker openBroker() {
    return Brokers.open(
        "kafka", Map.of("bootstrap.servers", KAFKA.bootstrapServers(), "publish.timeout", "10s"));
  }

  @Override
  protected Broker openUnreachableBroker() {
    return Brokers.open(
        "kafka",
        Map.of(
            "bootstrap.servers",
            KafkaTestBroker.unreachableBootstrapServers(),
            "publish.timeout",
            "3s"));
  }

  @Override
  protected String newDestination() {
    String topic = "conformance-" + UUID.randomUUID();
    KAFKA.createTopic(topic, 4);
    return topic;
  }

  @Override
  protected Duration unreachableBound() {
    return Duration.ofSeconds(7);
  }
}
