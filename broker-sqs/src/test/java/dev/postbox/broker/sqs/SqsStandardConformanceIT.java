package dev.postbox.broker.sqs;

import dev.postbox.broker.sqs.testing.ElasticMqTestBroker;
import dev.postbox.spi.Broker;
import dev.postbox.spi.Brokers;
import dev.postbox.spi.testing.BrokerConformanceSuite;
import java.time.Duration;
import java.util.UUID;

/** The whole conformance suite against ElasticMQ, standard queues. */
class SqsStandardConformanceIT extends BrokerConformanceSuite {

  static final ElasticMqTestBroker SQS = ElasticMqTestBroker.shared();

  @Override
  protected Broker openBroker() {
    // A short visibility timeout, so a broken promise would show within the quiet period.
    return Brokers.open("sqs", SQS.config("visibility.timeout", "2s", "wait.time", "1s"));
  }

  @Override
  protected Broker openUnreachableBroker() {
    return Brokers.open(
        "sqs",
        java.util.Map.of(
            "endpoint", ElasticMqTestBroker.unreachableEndpoint(),
            "access.key.id", "x",
            "secret.access.key", "y",
            "publish.timeout", "3s"));
  }

  @Override
  protected String newDestination() {
    String name = "conformance-" + UUID.randomUUID();
    SQS.createQueue(name);
    return name;
  }

  @Override
  protected Duration quietPeriod() {
    return Duration.ofSeconds(3);
  }

  @Override
  protected Duration unreachableBound() {
    return Duration.ofSeconds(5);
  }
}
