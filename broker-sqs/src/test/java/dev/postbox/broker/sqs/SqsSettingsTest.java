package dev.postbox.broker.sqs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.spi.Brokers;
import dev.postbox.spi.ConfigException;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

class SqsSettingsTest {

  @Test
  void isFoundByName() {
    assertThat(Brokers.available()).contains("sqs");
  }

  @Test
  void defaultsSuitRealAws() {
    SqsSettings s = SqsSettings.from(Map.of());
    assertThat(s.endpoint()).isNull();
    assertThat(s.accessKeyId()).isNull();
    assertThat(s.waitTime()).isEqualTo(Duration.ofSeconds(20));
    assertThat(s.visibilityTimeout()).isEqualTo(Duration.ofSeconds(10));
    assertThat(s.heartbeatInterval()).isEqualTo(Duration.ofSeconds(10).dividedBy(3));
    assertThat(s.maxMessageBytes()).isEqualTo(262_144);
  }

  @Test
  void aHeartbeatIntervalSetAloneKeepsThreeBeatsPerVisibilityTimeout() {
    // with the 30 s default, heartbeat.interval=15s was valid; it must stay so
    SqsSettings s = SqsSettings.from(Map.of("heartbeat.interval", "15s"));
    assertThat(s.visibilityTimeout()).isEqualTo(Duration.ofSeconds(45));
    assertThat(SqsSettings.from(Map.of("heartbeat.interval", "1s")).visibilityTimeout())
        .isEqualTo(Duration.ofSeconds(10));
    // FIFO 15 s: a consumer stalled past it shares its message groups with another, and a killed
    // consumer's message blocks its group until it ends
    assertThat(SqsSettings.from(Map.of("fifo", "true")).visibilityTimeout())
        .isEqualTo(Duration.ofSeconds(15));
  }

  @Test
  void badKeysAndValuesFailNamingTheKey() {
    assertThatThrownBy(() -> SqsSettings.from(Map.of("endpont", "http://x")))
        .isInstanceOfSatisfying(
            ConfigException.class, e -> assertThat(e.key()).isEqualTo("endpont"));
    assertThatThrownBy(() -> SqsSettings.from(Map.of("endpoint", "not a url")))
        .isInstanceOfSatisfying(
            ConfigException.class, e -> assertThat(e.key()).isEqualTo("endpoint"));
    assertThatThrownBy(() -> SqsSettings.from(Map.of("wait.time", "30s")))
        .hasMessageContaining("between PT0S and PT20S");
    assertThatThrownBy(
            () -> SqsSettings.from(Map.of("visibility.timeout", "5s", "heartbeat.interval", "5s")))
        .isInstanceOfSatisfying(
            ConfigException.class, e -> assertThat(e.key()).isEqualTo("heartbeat.interval"));
  }

  @Test
  void keysComeInPairsAndTheSecretIsNeverShown() {
    assertThatThrownBy(() -> SqsSettings.from(Map.of("access.key.id", "AKIA")))
        .isInstanceOfSatisfying(
            ConfigException.class, e -> assertThat(e.key()).isEqualTo("secret.access.key"));
    SqsSettings s = SqsSettings.from(Map.of("access.key.id", "AKIA", "secret.access.key", "wJalr"));
    assertThat(s.toString()).doesNotContain("wJalr");
  }

  @Test
  void capabilitiesFollowTheQueueKind() {
    try (var standard =
            Brokers.open(
                "sqs",
                Map.of(
                    "endpoint",
                    "http://localhost:1",
                    "access.key.id",
                    "a",
                    "secret.access.key",
                    "b"));
        var fifo =
            Brokers.open(
                "sqs",
                Map.of(
                    "endpoint",
                    "http://localhost:1",
                    "access.key.id",
                    "a",
                    "secret.access.key",
                    "b",
                    "fifo",
                    "true"))) {
      assertThat(standard.capabilities().perKeyOrdering()).isFalse();
      assertThat(standard.capabilities().nativeDeduplication()).isFalse();
      assertThat(fifo.capabilities().perKeyOrdering()).isTrue();
      assertThat(fifo.capabilities().deduplicationWindow()).isEqualTo(Duration.ofMinutes(5));
      assertThat(standard.capabilities().maxMessageBytes()).isLessThan(262_144);
    }
  }
}
