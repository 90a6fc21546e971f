package dev.postbox.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

class BrokerConfigTest {

  enum Mode {
    FAST,
    SLOW_AND_STEADY
  }

  @Test
  void unknownKeysFailNamingTheKey() {
    BrokerConfig c = BrokerConfig.of("kafka", Map.of("bootstrap.server", "x", "group", "g"));
    c.optional("bootstrap.servers");
    c.optional("group");
    assertThatThrownBy(c::requireNoUnknownKeys)
        .isInstanceOfSatisfying(
            ConfigException.class, e -> assertThat(e.key()).isEqualTo("bootstrap.server"))
        .hasMessageContaining("unknown config key(s) [bootstrap.server]")
        .hasMessageContaining("bootstrap.servers");
  }

  @Test
  void prefixedKeysPassThrough() {
    BrokerConfig c = BrokerConfig.of("kafka", Map.of("kafka.linger.ms", "5", "kafka.acks", "all"));
    assertThat(c.withPrefix("kafka."))
        .containsExactlyInAnyOrderEntriesOf(Map.of("linger.ms", "5", "acks", "all"));
    c.requireNoUnknownKeys();
  }

  @Test
  void missingRequiredKeyIsNamed() {
    BrokerConfig c = BrokerConfig.of("sqs", Map.of());
    assertThatThrownBy(() -> c.required("queue"))
        .isInstanceOf(ConfigException.class)
        .hasMessage("sqs: 'queue' is required");
  }

  @Test
  void numbersAreParsedAndBounded() {
    BrokerConfig c = BrokerConfig.of("a", Map.of("n", "7", "bad", "seven", "big", "1000"));
    assertThat(c.integer("n", 1, 1, 10)).isEqualTo(7);
    assertThat(c.integer("unset", 3, 1, 10)).isEqualTo(3);
    assertThatThrownBy(() -> c.integer("bad", 1, 1, 10))
        .hasMessageContaining("'bad' = 'seven' must be a whole number");
    assertThatThrownBy(() -> c.integer("big", 1, 1, 10)).hasMessageContaining("between 1 and 10");
  }

  @Test
  void durationsAcceptShortAndIsoForms() {
    BrokerConfig c =
        BrokerConfig.of("a", Map.of("a", "500ms", "b", "30s", "c", "PT2M", "d", "soon", "e", "2d"));
    Duration max = Duration.ofDays(7);
    assertThat(c.duration("a", null, Duration.ZERO, max)).isEqualTo(Duration.ofMillis(500));
    assertThat(c.duration("b", null, Duration.ZERO, max)).isEqualTo(Duration.ofSeconds(30));
    assertThat(c.duration("c", null, Duration.ZERO, max)).isEqualTo(Duration.ofMinutes(2));
    assertThat(c.duration("e", null, Duration.ZERO, max)).isEqualTo(Duration.ofDays(2));
    assertThatThrownBy(() -> c.duration("d", null, Duration.ZERO, max))
        .hasMessageContaining("'d' = 'soon' must be a duration");
    assertThatThrownBy(() -> c.duration("e", null, Duration.ZERO, Duration.ofDays(1)))
        .hasMessageContaining("must be between");
  }

  @Test
  void booleansAreStrict() {
    BrokerConfig c = BrokerConfig.of("a", Map.of("x", "TRUE", "y", "yes"));
    assertThat(c.bool("x", false)).isTrue();
    assertThatThrownBy(() -> c.bool("y", false)).hasMessageContaining("must be true or false");
  }

  @Test
  void choicesListTheAlternatives() {
    BrokerConfig c = BrokerConfig.of("a", Map.of("m", "slow-and-steady", "n", "medium"));
    assertThat(c.choice("m", Mode.class, Mode.FAST)).isEqualTo(Mode.SLOW_AND_STEADY);
    assertThatThrownBy(() -> c.choice("n", Mode.class, Mode.FAST))
        .hasMessageContaining("must be one of [fast, slow-and-steady]");
  }

  @Test
  void blankValuesAreRejected() {
    BrokerConfig c = BrokerConfig.of("a", Map.of("x", "  "));
    assertThatThrownBy(() -> c.optional("x")).hasMessageContaining("must not be blank");
  }

  @Test
  void secretValuesNeverAppearInMessages() {
    BrokerConfig c = BrokerConfig.of("artemis", Map.of("password", "hunter2"));
    assertThatThrownBy(() -> c.integer("password", 0, 0, 1))
        .hasMessageNotContaining("hunter2")
        .hasMessageContaining("(hidden)");
    assertThat(BrokerConfig.isSecret("kafka.sasl.jaas.config")).isTrue();
    assertThat(BrokerConfig.isSecret("ssl.key.password")).isTrue();
    assertThat(BrokerConfig.isSecret("bootstrap.servers")).isFalse();
  }
}
