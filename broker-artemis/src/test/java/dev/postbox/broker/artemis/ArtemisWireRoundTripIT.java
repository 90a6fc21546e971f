package dev.postbox.broker.artemis;

import dev.postbox.broker.artemis.testing.ArtemisTestBroker;
import dev.postbox.spi.Broker;
import dev.postbox.spi.Brokers;
import dev.postbox.spi.Capabilities;
import dev.postbox.spi.Consumer;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.Subscription;
import dev.postbox.spi.testing.WireRoundTripProperties;
import java.util.Map;
import java.util.UUID;
import net.jqwik.api.lifecycle.AfterContainer;

/**
 * The kit's wire round trip through a real embedded Artemis broker: JMS properties and a bytes
 * body, sent and received. Duplicate detection is off, because the generators repeat ids.
 */
class ArtemisWireRoundTripIT extends WireRoundTripProperties {

  private static final ArtemisTestBroker ARTEMIS = ArtemisTestBroker.shared();
  private static final String QUEUE = "wire-" + UUID.randomUUID();
  private static final Broker BROKER =
      Brokers.open("artemis", Map.of("url", ARTEMIS.url(), "duplicate.detection", "false"));
  private static final Consumer CONSUMER = BROKER.subscribe(Subscription.of(QUEUE, "wire"));

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
