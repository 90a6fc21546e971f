package dev.postbox.broker.sqs;

import dev.postbox.broker.sqs.testing.ElasticMqTestBroker;
import dev.postbox.spi.Broker;
import dev.postbox.spi.Brokers;
import dev.postbox.spi.Capabilities;
import dev.postbox.spi.Consumer;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.Subscription;
import dev.postbox.spi.testing.WireRoundTripProperties;
import java.util.UUID;
import net.jqwik.api.lifecycle.AfterContainer;

/**
 * The kit's wire round trip through ElasticMQ, a standard queue: the adapter's publisher (its size
 * and character rules, the body's Base64 fallback, attribute packing past 10) and its consumer.
 */
class SqsWireRoundTripIT extends WireRoundTripProperties {

  private static final ElasticMqTestBroker SQS = ElasticMqTestBroker.shared();
  private static final String QUEUE = "wire-" + UUID.randomUUID();
  private static final Broker BROKER = Brokers.open("sqs", SQS.config("wait.time", "1s"));
  private static final Consumer CONSUMER;

  static {
    SQS.createQueue(QUEUE);
    CONSUMER = BROKER.subscribe(Subscription.of(QUEUE, "wire"));
  }

  @AfterContainer
  static void close() {
    CONSUMER.close();
    BROKER.close();
  }

  @Override
  protected Capabilities capabilities() {
    return BROKER.capabilities();
  }

  @Override
  protected String destination() {
    return QUEUE;
  }

  @Override
  protected Envelope roundTrip(String destination, Envelope e) {
    return publishAndReceive(BROKER, CONSUMER, destination, e);
  }
}
