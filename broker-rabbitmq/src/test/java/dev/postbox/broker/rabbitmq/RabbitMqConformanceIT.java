package dev.postbox.broker.rabbitmq;

import dev.postbox.broker.rabbitmq.testing.LocalRabbitMq;
import dev.postbox.spi.Broker;
import dev.postbox.spi.Brokers;
import dev.postbox.spi.testing.BrokerConformanceSuite;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The whole conformance suite against the local RabbitMQ server, in a vhost of this class's own, on
 * the default quorum queues.
 */
class RabbitMqConformanceIT extends BrokerConformanceSuite {

  private static String vhost;

  @BeforeAll
  static void makeVhost() {
    vhost = LocalRabbitMq.newVhost("conformance");
  }

  @AfterAll
  static void removeVhost() {
    LocalRabbitMq.deleteVhost(vhost);
  }

  /** Extra settings of a subclass's variant. */
  protected Map<String, String> variant() {
    return Map.of("claim.interval", "200ms");
  }

  @Override
  protected Broker openBroker() {
    Map<String, String> config = new HashMap<>(LocalRabbitMq.config(vhost));
    config.put("publish.timeout", "10s");
    config.putAll(variant());
    return Brokers.open("rabbitmq", config);
  }

  @Override
  protected Broker openUnreachableBroker() {
    return Brokers.open("rabbitmq", LocalRabbitMq.unreachableConfig());
  }

  @Override
  protected Duration unreachableBound() {
    return Duration.ofSeconds(5);
  }
}
