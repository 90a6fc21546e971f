package dev.postbox.reactive;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ChannelSettingsTest {

  private static java.util.function.Function<String, Optional<String>> config(
      Map<String, String> m) {
    return k -> Optional.ofNullable(m.get(k));
  }

  @Test
  void onlyIncomingChannelsOfThisConnectorAreSubscriptions() {
    Map<String, String> m =
        Map.of(
            "mp.messaging.incoming.charges.connector", "postbox",
            "mp.messaging.incoming.audit.connector", "liberty-kafka",
            "mp.messaging.outgoing.orders.connector", "postbox",
            "mp.messaging.incoming.spaced.connector", " postbox ",
            "mp.messaging.incoming.off.connector", "postbox",
            "mp.messaging.incoming.off.enabled", "false");
    assertThat(ChannelSettings.incomingChannels(m.keySet(), config(m)))
        .containsExactly("charges", "spaced");
  }

  @Test
  void channelAttributesWinOverConnectorWideOnesWhichWinOverDefaults() {
    Map<String, String> m =
        Map.of(
            "mp.messaging.incoming.charges.destination", "orders",
            "mp.messaging.connector.postbox.group", "billing",
            "mp.messaging.connector.postbox.destination", "ignored",
            "mp.messaging.incoming.charges.types", "OrderPlaced, OrderCancelled,",
            "mp.messaging.incoming.charges.ack-timeout", "500ms");
    ChannelSettings s = ChannelSettings.incoming("charges", config(m));
    assertThat(s.destination()).isEqualTo("orders");
    assertThat(s.group()).isEqualTo("billing");
    assertThat(s.types()).isEqualTo(Set.of("OrderPlaced", "OrderCancelled"));
    assertThat(s.payload()).isEqualTo("string");
    assertThat(s.ackTimeout()).isEqualTo(Duration.ofMillis(500));
    assertThat(s.waitForSubscriber()).isEqualTo(Duration.ofSeconds(30));

    ChannelSettings bare = ChannelSettings.incoming("plain", config(Map.of()));
    assertThat(bare.destination()).isEqualTo("plain");
    assertThat(bare.group()).isEqualTo("plain");
    assertThat(bare.types()).isEmpty();
  }

  @Test
  void outgoingDefaultsToTheChannelNameForDestinationAndType() {
    ChannelSettings s =
        ChannelSettings.outgoing(
            "order-events", config(Map.of("mp.messaging.outgoing.order-events.type", "Placed")));
    assertThat(s.destination()).isEqualTo("order-events");
    assertThat(s.type()).isEqualTo("Placed");
    assertThat(s.contentType()).isEqualTo("application/json");
    assertThat(s.source()).isNull();
  }

  @Test
  void aBadValueNamesItsKey() {
    assertThatThrownBy(
            () ->
                ChannelSettings.incoming(
                    "c", config(Map.of("mp.messaging.incoming.c.ack-timeout", "soon"))))
        .hasMessageContaining("mp.messaging.incoming.c.ack-timeout=soon");
    assertThatThrownBy(
            () ->
                ChannelSettings.incoming(
                    "c", config(Map.of("mp.messaging.incoming.c.wait-for-subscriber", "0s"))))
        .hasMessageContaining("must be positive");
    assertThatThrownBy(
            () ->
                ChannelSettings.outgoing(
                    "c", config(Map.of("mp.messaging.outgoing.c.destination", " "))))
        .hasMessageContaining("mp.messaging.outgoing.c.destination is empty");
  }
}
