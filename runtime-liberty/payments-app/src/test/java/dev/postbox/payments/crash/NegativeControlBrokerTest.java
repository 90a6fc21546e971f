package dev.postbox.payments.crash;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.spi.ConfigException;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** What each negative control does to a delivery: the promise it breaks, and the rest kept. */
class NegativeControlBrokerTest {

  /** A delivery that records how it was settled. */
  private static final class Recorded implements Delivery {
    final Envelope envelope;
    final List<String> settlements = new ArrayList<>();

    Recorded(Envelope envelope) {
      this.envelope = envelope;
    }

    @Override
    public Envelope envelope() {
      return envelope;
    }

    @Override
    public int attempt() {
      return 2;
    }

    @Override
    public Map<String, String> metadata() {
      return Map.of("offset", "7");
    }

    @Override
    public void ack() {
      settlements.add("ack");
    }

    @Override
    public void nack(Duration delay) {
      settlements.add("nack " + delay.toMillis());
    }
  }

  private static final Envelope EVENT =
      Envelope.builder()
          .id("evt-1")
          .source("/orders")
          .type("OrderPlaced")
          .key("customer-1")
          .payload("{}")
          .build();

  @Test
  void ackOnPollAcknowledgesAsItPollsAndIgnoresTheInboxsOwnSettlement() {
    Recorded real = new Recorded(EVENT);
    Delivery d = NegativeControlBroker.broken(real, NegativeControlBroker.Mode.ACK_ON_POLL);
    assertThat(real.settlements).containsExactly("ack");
    d.nack(Duration.ofSeconds(1)); // the inbox's transaction failed: too late, it is gone
    d.ack();
    assertThat(real.settlements).containsExactly("ack");
    assertThat(d.envelope()).isEqualTo(EVENT);
  }

  @Test
  void freshIdsGiveEveryDeliveryANewIdAndKeepTheRest() {
    Recorded real = new Recorded(EVENT);
    Delivery first = NegativeControlBroker.broken(real, NegativeControlBroker.Mode.FRESH_IDS);
    Delivery copy = NegativeControlBroker.broken(real, NegativeControlBroker.Mode.FRESH_IDS);
    assertThat(first.envelope().id()).isNotEqualTo(EVENT.id()).isEqualTo(first.envelope().id());
    assertThat(copy.envelope().id()).isNotEqualTo(first.envelope().id());
    assertThat(first.envelope().toBuilder().id(EVENT.id()).build()).isEqualTo(EVENT);
    first.nack(Duration.ofMillis(5));
    first.ack();
    assertThat(real.settlements).containsExactly("nack 5", "ack");
    assertThat(first.attempt()).isEqualTo(2);
    assertThat(first.metadata()).containsEntry("offset", "7");
  }

  @Test
  void noKeysDropTheKeyOnly() {
    Recorded real = new Recorded(EVENT);
    Delivery d = NegativeControlBroker.broken(real, NegativeControlBroker.Mode.NO_KEYS);
    assertThat(d.envelope().key()).isNull();
    assertThat(d.envelope().toBuilder().key(EVENT.key()).build()).isEqualTo(EVENT);
    d.ack();
    assertThat(real.settlements).containsExactly("ack");
  }

  @Test
  void aBadModeOrAMissingDelegateIsNamed() {
    NegativeControlBroker provider = new NegativeControlBroker();
    assertThatThrownBy(
            () ->
                provider.open(
                    Map.of(
                        NegativeControlBroker.MODE,
                        "skip-it",
                        NegativeControlBroker.DELEGATE,
                        "x")))
        .isInstanceOfSatisfying(
            ConfigException.class, e -> assertThat(e.key()).isEqualTo(NegativeControlBroker.MODE));
    assertThatThrownBy(() -> provider.open(Map.of(NegativeControlBroker.MODE, "no-keys")))
        .isInstanceOfSatisfying(
            ConfigException.class,
            e -> assertThat(e.key()).isEqualTo(NegativeControlBroker.DELEGATE));
  }
}
