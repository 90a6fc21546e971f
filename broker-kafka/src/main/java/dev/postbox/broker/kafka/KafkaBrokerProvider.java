package dev.postbox.broker.kafka;

import dev.postbox.spi.Broker;
import dev.postbox.spi.BrokerProvider;
import java.util.Map;

/**
 * The Kafka adapter, registered with {@link java.util.ServiceLoader} as {@value #NAME}. See {@code
 * docs/brokers/kafka.md} for the semantics and every configuration key.
 */
public final class KafkaBrokerProvider implements BrokerProvider {

  public static final String NAME = "kafka";

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public Broker open(Map<String, String> config) {
    return KafkaBroker.open(KafkaSettings.from(config));
  }
}
