package dev.postbox.broker.sqs;

import dev.postbox.broker.sqs.testing.ElasticMqTestBroker;
import dev.postbox.spi.Broker;
import dev.postbox.spi.Brokers;
import dev.postbox.spi.testing.BrokerConformanceSuite;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;

/** The whole conformance suite against ElasticMQ, FIFO queues. */
class SqsFifoConformanceIT extends BrokerConformanceSuite {

  static final ElasticMqTestBroker SQS = ElasticMqTestBroker.shared();

  @Override
  protected Broker openBroker() {
    return Brokers.open(
        "sqs", SQS.config("fifo", "true", "visibility.timeout", "2s", "wait.time", "1s"));
  }

  @Override
  protected Broker openUnreachableBroker() {
    return Brokers.open(
        "sqs",
        Map.of(
            "endpoint", ElasticMqTestBroker.unreachableEndpoint(),
            "fifo", "true",
            "access.key.id", "x",
            "secret.access.key", "y",
            "publish.timeout", "3s"));
  }

  @Override
  protected String newDestination() {
    String name = "conformance-" + UUID.randomUUID() + ".fifo";
    SQS.createQueue(name);
    return name;
  }

  @Override
  protected String unreachableDestination() {
    return "unreachable-" + UUID.randomUUID() + ".fifo";
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
