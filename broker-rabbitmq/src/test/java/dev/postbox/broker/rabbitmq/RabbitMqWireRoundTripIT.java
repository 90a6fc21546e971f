package dev.postbox.broker.rabbitmq;

import dev.postbox.broker.rabbitmq.testing.LocalRabbitMq;
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
 * The kit's wire round trip through the local RabbitMQ server: AMQP headers and properties and a
 * body, sent and received.
 */
class RabbitMqWireRoundTripIT extends WireRoundTripProperties {

  private static final String VHOST = LocalRabbitMq.newVhost("wire");
  private static final String QUEUE = "wire-" + UUID.randomUUID();
  private static final Broker BROKER = Brokers.open("rabbitmq", LocalRabbitMq.config(VHOST));
  private static final Consumer CONSUMER = BROKER.subscribe(Subscription.of(QUEUE, "wire"));

  @AfterContainer
  static void close() {
    CONSUMER.close();
    BROKER.close();
    LocalRabbitMq.deleteVhost(VHOST);
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
