package dev.postbox.runtime.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.runtime.PostboxSettings;
import dev.postbox.spi.BrokerConfig;
import dev.postbox.spi.ConfigException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Each key is declared once; the declarations give the parser, the key lists and the docs. */
class ConfigurationDocTest {

  private static final Path PAGE = Path.of("../../docs/configuration.md");

  @Test
  void docsConfigurationMdIsWhatTheDeclarationsGenerate() throws IOException {
    String generated = ConfigurationDoc.markdown();
    if (Boolean.getBoolean("postbox.docs.write")) {
      Files.writeString(PAGE, generated);
    }
    assertThat(PAGE).exists();
    assertThat(Files.readString(PAGE))
        .as(
            "docs/configuration.md is generated from PostboxKeys; regenerate it with ./mvnw -pl"
                + " runtime-liberty/runtime test -Dtest=ConfigurationDocTest"
                + " -Dpostbox.docs.write=true")
        .isEqualTo(generated);
  }

  @Test
  void everyKeyIsDeclaredOnceAndEveryDeclaredKeyIsKnownToTheParser() {
    Set<String> names = new HashSet<>();
    for (ConfigKey<?> k : PostboxKeys.ALL) {
      assertThat(names.add(k.name())).as("declared twice: %s", k.name()).isTrue();
      assertThat(k.description()).as(k.name()).isNotBlank();
    }
    assertThat(PostboxSettings.ALL_KEYS).containsExactlyElementsOf(PostboxKeys.keyNames());
    // an undeclared key is refused, naming it
    assertThatThrownBy(
            () ->
                PostboxSettings.parse(Map.of("postbox.broker", "kafka", "postbox.batch-sise", "5")))
        .isInstanceOfSatisfying(
            ConfigException.class, e -> assertThat(e.key()).isEqualTo("postbox.batch-sise"));
  }

  @Test
  void theDeclaredRangeIsWhatTheParserEnforces() {
    for (ConfigKey<?> k : PostboxKeys.ALL) {
      String below;
      if (k.type() == ConfigKey.Type.INTEGER) {
        String[] range = k.rangeText().replace(",", "").split(" to ");
        below = Long.toString(Long.parseLong(range[0]) - 1);
        String above = Long.toString(Long.parseLong(range[1]) + 1);
        assertRefused(k, above);
      } else if (k.type() == ConfigKey.Type.DURATION) {
        String min = k.rangeText().split(" to ")[0];
        Duration d = parse(min);
        if (d.isZero()) {
          continue; // nothing below zero is a duration the parser reads
        }
        below = d.toMillis() - 1 + "ms";
      } else {
        continue;
      }
      assertRefused(k, below);
    }
  }

  @Test
  void theEnvironmentSpellingIsMicroProfileConfigs() {
    assertThat(PostboxKeys.RELAY_ENABLED.envName()).isEqualTo("POSTBOX_RELAY_ENABLED");
    assertThat(InboxKeys.INBOX_FRONT_MAX_IDS.envName()).isEqualTo("POSTBOX_INBOX_FRONT_MAX_IDS");
    assertThat(PostboxKeys.BATCH_SIZE.read(BrokerConfig.of("postbox", Map.of()))).isEqualTo(500);
  }

  private static void assertRefused(ConfigKey<?> k, String value) {
    BrokerConfig c = BrokerConfig.of("postbox", Map.of(k.name(), value));
    assertThatThrownBy(() -> k.read(c))
        .as("%s=%s", k.name(), value)
        .isInstanceOfSatisfying(
            ConfigException.class, e -> assertThat(e.key()).isEqualTo(k.name()));
  }

  /** Read as the parser reads it, so the test and the parser agree on what a duration is. */
  private static Duration parse(String text) {
    return BrokerConfig.of("postbox", Map.of("d", text))
        .duration("d", Duration.ZERO, Duration.ZERO, Duration.ofDays(100_000));
  }
}
