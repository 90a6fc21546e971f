package dev.postbox.spi.testing;

import dev.postbox.spi.Broker;
import java.time.Duration;

/** The reference broker passes the whole conformance suite. */
class ReferenceBrokerConformanceTest extends BrokerConformanceSuite {

  @Override
  protected Broker openBroker() {
    return ReferenceBroker.create();
  }

  @Override
  protected Broker openUnreachableBroker() {
    return ReferenceBroker.unreachable();
  }

  @Override
  protected Duration quietPeriod() {
    return Duration.ofMillis(300);
  }

  @Override
  protected Duration unreachableBound() {
    return Duration.ofSeconds(1);
  }
}
