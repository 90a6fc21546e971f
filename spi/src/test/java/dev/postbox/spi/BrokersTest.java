package dev.postbox.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

class BrokersTest {

  @Test
  void findsProvidersWithServiceLoader() {
    assertThat(Brokers.available()).contains("reference");
  }

  @Test
  void opensABrokerByName() {
    try (Broker broker = Brokers.open("reference", Map.of("instance", "brokers-test"))) {
      assertThat(broker.name()).isEqualTo("reference");
      try (Broker same = Brokers.open("reference", Map.of("instance", "brokers-test"))) {
        Consumer consumer = same.subscribe(Subscription.of("d", "g"));
        broker.publisher().publish("d", Envelope.builder().source("s").type("t").build());
        assertThat(consumer.poll(1, Duration.ofSeconds(5))).hasSize(1);
      }
    }
  }

  @Test
  void unknownNameListsWhatExists() {
    assertThatThrownBy(() -> Brokers.open("rabbit", Map.of()))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.key()).isEqualTo("rabbit"))
        .hasMessageContaining("no broker adapter named 'rabbit'")
        .hasMessageContaining("[reference]");
  }

  @Test
  void providerRejectsUnknownKeys() {
    assertThatThrownBy(() -> Brokers.open("reference", Map.of("instanse", "x")))
        .isInstanceOfSatisfying(
            ConfigException.class, e -> assertThat(e.key()).isEqualTo("instanse"));
  }
}
