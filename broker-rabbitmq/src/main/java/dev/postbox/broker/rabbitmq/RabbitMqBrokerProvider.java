package dev.postbox.broker.rabbitmq;

import dev.postbox.spi.Broker;
import dev.postbox.spi.BrokerProvider;
import java.util.Map;

/**
 * The RabbitMQ adapter, registered with {@link java.util.ServiceLoader} as {@value #NAME}. See
 * {@code docs/brokers/rabbitmq.md} for the semantics and every configuration key.
 */
public final class RabbitMqBrokerProvider implements BrokerProvider {

  public static final String NAME = "rabbitmq";

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public Broker open(Map<String, String> config) {
    return RabbitMqBroker.open(RabbitMqSettings.from(config));
  }
}
