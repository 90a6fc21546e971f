package dev.postbox.broker.artemis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.spi.Brokers;
import dev.postbox.spi.ConfigException;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ArtemisSettingsTest {

  @Test
  void isFoundByName() {
    assertThat(Brokers.available()).contains("artemis");
  }

  @Test
  void urlIsRequiredAndMustBeAnArtemisUrl() {
    assertThatThrownBy(() -> ArtemisSettings.from(Map.of()))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.key()).isEqualTo("url"));
    assertThatThrownBy(() -> ArtemisSettings.from(Map.of("url", "http://localhost:61616")))
        .hasMessageContaining("must be an Artemis URL");
  }

  @Test
  void haAndFailoverUrlsPassThrough() {
    String url = "(tcp://a:61616,tcp://b:61616)?ha=true&reconnectAttempts=-1";
    assertThat(ArtemisSettings.from(Map.of("url", url)).url()).isEqualTo(url);
  }

  @Test
  void unknownKeysFailNamingTheKey() {
    assertThatThrownBy(() -> ArtemisSettings.from(Map.of("url", "tcp://x:1", "pasword", "p")))
        .isInstanceOfSatisfying(
            ConfigException.class, e -> assertThat(e.key()).isEqualTo("pasword"));
  }

  @Test
  void userAndPasswordGoTogetherAndThePasswordIsNeverShown() {
    assertThatThrownBy(() -> ArtemisSettings.from(Map.of("url", "tcp://x:1", "user", "app")))
        .isInstanceOfSatisfying(
            ConfigException.class, e -> assertThat(e.key()).isEqualTo("password"));
    ArtemisSettings s =
        ArtemisSettings.from(Map.of("url", "tcp://x:1", "user", "app", "password", "s3cret"));
    assertThat(s.toString()).doesNotContain("s3cret").contains("(hidden)");
  }

  @Test
  void duplicateDetectionIsSwitchableAndReportedAsACapability() {
    try (var on = Brokers.open("artemis", Map.of("url", "tcp://localhost:1"));
        var off =
            Brokers.open(
                "artemis", Map.of("url", "tcp://localhost:1", "duplicate.detection", "false"))) {
      assertThat(on.capabilities().nativeDeduplication()).isTrue();
      assertThat(on.capabilities().deduplicationWindow()).isEqualTo(Duration.ofMinutes(10));
      assertThat(off.capabilities().nativeDeduplication()).isFalse();
    }
  }
}
