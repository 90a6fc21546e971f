package dev.postbox.spi.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.fail;

import dev.postbox.spi.Broker;
import dev.postbox.spi.BrokerException;
import dev.postbox.spi.Brokers;
import dev.postbox.spi.Consumer;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.MalformedMessageException;
import dev.postbox.spi.Subscription;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * What tests outside an adapter rely on when they take its {@link TestBroker}: it is registered,
 * its settings open the adapter, a raw message reaches the adapter's consumer, a broker of the
 * test's own keeps a published event across a restart and across a stop and resume, and the
 * unreachable settings reach nothing. An adapter runs it through a short subclass naming its
 * provider, one subclass per variant.
 */
public abstract class TestBrokerKit {

  private static final Duration ARRIVAL = Duration.ofSeconds(60);

  /** The provider under test. */
  protected abstract TestBroker.Provider provider();

  @Test
  public final void isRegisteredForServiceLoaderUnderItsName() {
    assertThat(TestBrokers.named(provider().name())).isInstanceOf(provider().getClass());
    assertThat(TestBrokers.named(provider().name()).adapter()).isEqualTo(provider().adapter());
  }

  @Test
  public final void aRawMessageReachesTheAdaptersConsumer() throws Exception {
    TestBroker shared = provider().shared();
    String destination = destination();
    shared.createDestination(destination, 1);
    try (shared;
        Broker broker = Brokers.open(provider().adapter(), shared.config());
        Consumer consumer = broker.subscribe(new Subscription(destination, group(), 5_000))) {
      shared.sendRaw(destination, Map.of("x_kit", "raw"), "not an event");
      Delivery d = receive(consumer, any -> true);
      // no CloudEvents attributes: the adapter hands it out as malformed, body and header intact
      assertThatThrownBy(d::envelope)
          .isInstanceOfSatisfying(
              MalformedMessageException.class,
              e -> {
                assertThat(new String(e.rawPayload(), StandardCharsets.UTF_8))
                    .isEqualTo("not an event");
                assertThat(e.rawHeaders()).containsEntry("x_kit", "raw");
              });
      d.ack();
    }
  }

  @Test
  public final void aBrokerOfItsOwnKeepsAnEventAcrossARestartAndAStop() {
    try (TestBroker own = provider().start()) {
      String destination = destination();
      own.createDestination(destination, 1);
      Envelope first = event();
      Envelope second = event();
      try (Broker broker = Brokers.open(provider().adapter(), own.config())) {
        broker.publisher().publish(destination, first);
      }
      own.restart();
      try (Broker broker = Brokers.open(provider().adapter(), own.config())) {
        broker.publisher().publish(destination, second);
      }
      own.stop();
      own.resume();
      try (Broker broker = Brokers.open(provider().adapter(), own.config());
          Consumer consumer = broker.subscribe(new Subscription(destination, group(), 5_000))) {
        List<String> ids = new ArrayList<>();
        receive(
            consumer,
            d -> {
              ids.add(d.envelope().id());
              d.ack();
              return ids.contains(first.id()) && ids.contains(second.id());
            });
        assertThat(ids).contains(first.id(), second.id());
      }
    }
  }

  @Test
  public final void theUnreachableSettingsReachNothing() {
    try (Broker broker = Brokers.open(provider().adapter(), provider().unreachableConfig())) {
      assertThatThrownBy(() -> broker.ping(Duration.ofSeconds(2)))
          .isInstanceOf(BrokerException.class);
    }
  }

  /** A consumer group of the test's own: on a shared broker, tests never share a group. */
  private static String group() {
    return "kit-" + UUID.randomUUID();
  }

  private String destination() {
    return "kit-" + UUID.randomUUID().toString().substring(0, 8) + provider().destinationSuffix();
  }

  private static Envelope event() {
    return Envelope.builder().source("urn:kit").type("Kit").key("k").payload("kit").build();
  }

  /**
   * Polls until {@code done} holds for a delivery, and returns it; fails after {@link #ARRIVAL}.
   */
  private static Delivery receive(Consumer consumer, java.util.function.Predicate<Delivery> done) {
    long deadline = System.nanoTime() + ARRIVAL.toNanos();
    while (System.nanoTime() < deadline) {
      for (Delivery d : consumer.poll(10, Duration.ofMillis(200))) {
        if (done.test(d)) {
          return d;
        }
      }
    }
    return fail("nothing arrived within " + ARRIVAL);
  }
}
