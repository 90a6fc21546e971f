package dev.postbox.runtime.inbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.spi.ConfigException;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

class InboxConfigTest {

  private static InboxConfig parse(String... keyValues) {
    Map<String, String> raw = new java.util.HashMap<>(Map.of("postbox.broker", "kafka"));
    for (int i = 0; i < keyValues.length; i += 2) {
      raw.put(keyValues[i], keyValues[i + 1]);
    }
    return dev.postbox.runtime.PostboxSettings.parse(raw).inbox();
  }

  @Test
  void defaultsAreInlineBatchedWithAFifteenDayWindowAndNoRedrive() {
    InboxConfig c = parse();
    InboxSettings s = c.settingsFor("orders", "payments", Set.of("OrderCaptured"));
    assertThat(s.subscription()).isEqualTo("orders/payments");
    assertThat(s.deferred()).isFalse();
    assertThat(s.batch()).isTrue();
    assertThat(s.retry().maxAttempts()).isEqualTo(10);
    assertThat(c.dedupWindow()).isEqualTo(Duration.ofDays(15));
    assertThat(c.redriveDelay()).isNull();
  }

  @Test
  void theDedupFrontIsOnByDefaultOffAtZeroAndNeverOutlivesTheDedupWindow() {
    InboxSettings s = parse().settingsFor("orders", "payments", Set.of());
    assertThat(s.front()).isEqualTo(new InboxSettings.Front(Duration.ofMinutes(10), 100_000));
    assertThat(
            parse("postbox.inbox.front.max-ids", "0")
                .settingsFor("orders", "payments", Set.of())
                .front())
        .isNull();
    // the database forgets ids after dedup-window; the front must not remember them longer
    assertThat(
            parse("postbox.inbox.dedup-window", "5m", "postbox.inbox.front.window", "1h")
                .settingsFor("orders", "payments", Set.of())
                .front()
                .window())
        .isEqualTo(Duration.ofMinutes(5));
    assertThatThrownBy(() -> parse("postbox.inbox.front.max-ids", "-1"))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("postbox.inbox.front.max-ids");
  }

  @Test
  void deferredModeIsSwitchedOnByGroupBySubscriptionOrForAll() {
    InboxConfig c = parse("postbox.inbox.deferred", "notifications, audit/archive");
    assertThat(c.settingsFor("payments", "notifications", Set.of()).deferred()).isTrue();
    assertThat(c.settingsFor("audit", "archive", Set.of()).deferred()).isTrue();
    assertThat(c.settingsFor("orders", "archive", Set.of()).deferred()).isFalse();
    assertThat(parse("postbox.inbox.deferred", "*").isDeferred("any", "thing")).isTrue();
  }

  @Test
  void sequencedModeIsSwitchedOnLikeDeferredModeAndNeverWithIt() {
    InboxConfig c = parse("postbox.inbox.sequenced", "payments, ledger/audit");
    assertThat(c.settingsFor("orders", "payments", Set.of()).sequenced()).isTrue();
    assertThat(c.settingsFor("ledger", "audit", Set.of()).sequenced()).isTrue();
    assertThat(c.settingsFor("orders", "audit", Set.of()).sequenced()).isFalse();
    assertThat(parse().settingsFor("orders", "payments", Set.of()).sequenced()).isFalse();
    InboxConfig both =
        parse("postbox.inbox.sequenced", "*", "postbox.inbox.deferred", "orders/notifications");
    assertThat(both.settingsFor("orders", "payments", Set.of()).sequenced()).isTrue();
    assertThatThrownBy(() -> both.settingsFor("orders", "notifications", Set.of()))
        .isInstanceOfSatisfying(
            ConfigException.class, e -> assertThat(e.key()).isEqualTo("postbox.inbox.sequenced"))
        .hasMessageContaining("orders/notifications")
        .hasMessageContaining("inline only");
  }

  @Test
  void badValuesAreNamed() {
    assertThatThrownBy(() -> parse("postbox.inbox.workers", "0"))
        .isInstanceOfSatisfying(
            ConfigException.class, e -> assertThat(e.key()).isEqualTo("postbox.inbox.workers"));
    assertThatThrownBy(() -> parse("postbox.inbox.redrive.delay", "soon"))
        .isInstanceOfSatisfying(
            ConfigException.class,
            e -> assertThat(e.key()).isEqualTo("postbox.inbox.redrive.delay"));
  }

  @Test
  void aWindowShorterThanTheBrokersHorizonIsWarnedAbout() {
    Duration week = Duration.ofDays(7);
    assertThat(InboxConfig.horizonWarning("orders", week, Optional.of(Duration.ofDays(14))))
        .hasValueSatisfying(w -> assertThat(w).contains("orders", "postbox.inbox.dedup-window"));
    assertThat(
            InboxConfig.horizonWarning(
                "orders", week, Optional.of(ChronoUnit.FOREVER.getDuration())))
        .hasValueSatisfying(w -> assertThat(w).contains("without limit"));
    assertThat(InboxConfig.horizonWarning("orders", week, Optional.of(Duration.ofDays(4))))
        .isEmpty();
    assertThat(InboxConfig.horizonWarning("orders", week, Optional.empty())).isEmpty();
  }
}
