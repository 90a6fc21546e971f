package dev.postbox.broker.artemis;

import dev.postbox.broker.artemis.testing.ArtemisTestBroker;
import dev.postbox.spi.Broker;
import dev.postbox.spi.Brokers;
import dev.postbox.spi.testing.BrokerConformanceSuite;
import java.time.Duration;
import java.util.Map;

/** The whole conformance suite against a real embedded Artemis broker. */
class ArtemisConformanceIT extends BrokerConformanceSuite {

  private static final ArtemisTestBroker ARTEMIS = ArtemisTestBroker.shared();

  @Override
  protected Broker openBroker() {
    return Brokers.open("artemis", Map.of("url", ARTEMIS.url(), "publish.timeout", "10s"));
  }

  @Override
  protected Broker openUnreachableBroker() {
    return Brokers.open(
        "artemis", Map.of("url", ArtemisTestBroker.unreachableUrl(), "publish.timeout", "3s"));
  }

  @Override
  protected Duration unreachableBound() {
    return Duration.ofSeconds(5);
  }
}
