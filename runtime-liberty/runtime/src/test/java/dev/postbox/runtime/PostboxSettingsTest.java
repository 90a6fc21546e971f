package dev.postbox.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.spi.ConfigException;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The postbox.* keys fail fast, naming the key. */
class PostboxSettingsTest {

  @Test
  void defaultsNeedOnlyTheBroker() {
    PostboxSettings s =
        PostboxSettings.parse(
            Map.of("postbox.broker", "kafka", "postbox.broker.bootstrap.servers", "k:9092"));
    assertThat(s.brokerName()).isEqualTo("kafka");
    assertThat(s.brokerConfig()).containsEntry("bootstrap.servers", "k:9092");
    assertThat(s.relay().partitions()).isEqualTo(64);
    assertThat(s.relay().leaseDuration()).isEqualTo(Duration.ofSeconds(30));
    assertThat(s.dataSource()).isEqualTo("jdbc/postbox");
    assertThat(s.lagThreshold()).isEqualTo(Duration.ofMinutes(1));
  }

  @Test
  void theBrokerIsRequiredWhileTheRelayIsOn() {
    assertThatThrownBy(() -> PostboxSettings.parse(Map.of()))
        .isInstanceOfSatisfying(
            ConfigException.class, e -> assertThat(e.key()).isEqualTo("postbox.broker"));
    assertThat(PostboxSettings.parse(Map.of("postbox.relay.enabled", "false")).relayEnabled())
        .isFalse();
  }

  @Test
  void invalidAndUnknownKeysAreNamed() {
    assertThatThrownBy(
            () ->
                PostboxSettings.parse(Map.of("postbox.broker", "kafka", "postbox.partitions", "0")))
        .isInstanceOfSatisfying(
            ConfigException.class, e -> assertThat(e.key()).isEqualTo("postbox.partitions"));
    assertThatThrownBy(
            () ->
                PostboxSettings.parse(
                    Map.of("postbox.broker", "kafka", "postbox.lease", "forever")))
        .isInstanceOfSatisfying(
            ConfigException.class, e -> assertThat(e.key()).isEqualTo("postbox.lease"));
    assertThatThrownBy(
            () ->
                PostboxSettings.parse(Map.of("postbox.broker", "kafka", "postbox.batchsize", "10")))
        .isInstanceOfSatisfying(
            ConfigException.class, e -> assertThat(e.key()).isEqualTo("postbox.batchsize"));
  }

  @Test
  void noDeployableKeyBreaksTheInboxsPromise() {
    // postbox.inbox.unsafe once turned deduplication off or acked before the commit, for the crash
    // harness's negative controls; those are broker wrappers in test code now, and a deployment
    // that still sets the key fails to start instead of running with it ignored.
    for (String mode : java.util.List.of("skip-dedup", "ack-before-commit", "no-key-lanes")) {
      assertThatThrownBy(
              () ->
                  PostboxSettings.parse(
                      Map.of("postbox.broker", "kafka", "postbox.inbox.unsafe", mode)))
          .isInstanceOfSatisfying(
              ConfigException.class, e -> assertThat(e.key()).isEqualTo("postbox.inbox.unsafe"));
    }
  }

  @Test
  void everyKeyTheParserReadsIsListedForEnvironmentLookup() {
    // A key read by parse(Map) but missing from KEYS could only be set in a properties file.
    java.util.Set<String> read = new java.util.TreeSet<>();
    try {
      PostboxSettings.parse(java.util.Map.of("postbox.broker", "kafka", "postbox.zzz", "x"));
    } catch (ConfigException e) {
      // the message lists every known key
      for (String k :
          e.getMessage().replaceAll(".*known keys are \\[", "").replace("]", "").split(", ")) {
        if (!k.endsWith("*")) {
          read.add(k);
        }
      }
    }
    assertThat(read).isNotEmpty();
    assertThat(PostboxSettings.ALL_KEYS).containsExactlyInAnyOrderElementsOf(read);
  }

  @Test
  void datePartitionsAreOffByDefaultAndTooManyBucketsAreRefusedNamingTheShortestInterval() {
    assertThat(PostboxSettings.parse(Map.of("postbox.broker", "kafka")).datePartitions()).isNull();
    assertThat(
            PostboxSettings.parse(
                    Map.of(
                        "postbox.broker", "kafka",
                        "postbox.date-partitions", "true",
                        "postbox.date-partitions.interval", "2d"))
                .datePartitions())
        .isEqualTo(Duration.ofDays(2));
    // the interval alone is a known key, unused while the option is off
    assertThat(
            PostboxSettings.parse(
                    Map.of("postbox.broker", "kafka", "postbox.date-partitions.interval", "1h"))
                .datePartitions())
        .isNull();
    // 15 days of inbox window in 1-hour buckets: 363 partitions
    assertThatThrownBy(
            () ->
                PostboxSettings.parse(
                    Map.of(
                        "postbox.broker", "kafka",
                        "postbox.date-partitions", "true",
                        "postbox.date-partitions.interval", "1h")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("postbox.date-partitions.interval")
        .hasMessageContaining("at most 100")
        .hasMessageContaining("PT3H42M41S");
  }
}
