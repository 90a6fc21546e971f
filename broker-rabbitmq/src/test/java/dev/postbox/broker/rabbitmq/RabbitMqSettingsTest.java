package dev.postbox.broker.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.spi.Brokers;
import dev.postbox.spi.ConfigException;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RabbitMqSettingsTest {

  private static final Map<String, String> MINIMAL =
      Map.of("host", "mq.example", "username", "app", "password", "s3cret");

  @Test
  void isFoundByName() {
    assertThat(Brokers.available()).contains("rabbitmq");
  }

  @Test
  void defaultsAreQuorumQueuesInFourShards() {
    RabbitMqSettings s = RabbitMqSettings.from(MINIMAL);
    assertThat(s.uri().toString()).isEqualTo("amqp://mq.example:5672//");
    assertThat(s.vhost()).isEqualTo("/");
    assertThat(s.queueType()).isEqualTo(RabbitMqSettings.QueueType.QUORUM);
    assertThat(s.shards()).isEqualTo(4);
    assertThat(s.declare()).isTrue();
    assertThat(s.prefetch()).isEqualTo(100);
    assertThat(s.maxNackDelay()).isEqualTo(Duration.ofHours(1));
  }

  @Test
  void aUriCarriesHostPortVhostAndCredentials() {
    RabbitMqSettings s =
        RabbitMqSettings.from(Map.of("uri", "amqp://app:p%40ss@mq.example:5673/orders"));
    assertThat(s.uri().getHost()).isEqualTo("mq.example");
    assertThat(s.uri().getPort()).isEqualTo(5673);
    assertThat(s.vhost()).isEqualTo("orders");
    assertThat(s.username()).isEqualTo("app");
    assertThat(s.password()).isEqualTo("p@ss");
    assertThat(s.uri().toString()).doesNotContain("p%40ss").doesNotContain("app@");
  }

  @Test
  void credentialsAreRequiredSoTheGuestDefaultIsNeverUsed() {
    assertThatThrownBy(() -> RabbitMqSettings.from(Map.of("host", "mq.example")))
        .isInstanceOfSatisfying(
            ConfigException.class, e -> assertThat(e.key()).isEqualTo("username"));
    assertThatThrownBy(() -> RabbitMqSettings.from(Map.of("host", "mq.example", "username", "app")))
        .isInstanceOfSatisfying(
            ConfigException.class, e -> assertThat(e.key()).isEqualTo("password"));
  }

  @Test
  void badKeysAndValuesFailNamingTheKey() {
    assertThatThrownBy(() -> RabbitMqSettings.from(with("shard", "4")))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.key()).isEqualTo("shard"));
    assertThatThrownBy(() -> RabbitMqSettings.from(with("queue.type", "stream")))
        .isInstanceOfSatisfying(
            ConfigException.class, e -> assertThat(e.key()).isEqualTo("queue.type"));
    assertThatThrownBy(() -> RabbitMqSettings.from(with("shards", "0")))
        .isInstanceOfSatisfying(
            ConfigException.class, e -> assertThat(e.key()).isEqualTo("shards"));
    assertThatThrownBy(() -> RabbitMqSettings.from(with("nack.max.delay", "2d")))
        .isInstanceOfSatisfying(
            ConfigException.class, e -> assertThat(e.key()).isEqualTo("nack.max.delay"));
    assertThatThrownBy(
            () -> RabbitMqSettings.from(Map.of("uri", "http://mq.example", "username", "a")))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.key()).isEqualTo("uri"));
    assertThatThrownBy(
            () ->
                RabbitMqSettings.from(
                    Map.of("uri", "amqp://a:b@mq.example", "host", "other.example")))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.key()).isEqualTo("host"));
  }

  @Test
  void theSecretIsNeverShown() {
    RabbitMqSettings s = RabbitMqSettings.from(Map.of("uri", "amqp://app:hunter2@mq.example/v"));
    assertThat(s.toString()).doesNotContain("hunter2").contains("(hidden)");
    assertThatThrownBy(() -> RabbitMqSettings.from(with("prefetch", "hunter2")))
        .isInstanceOf(ConfigException.class);
  }

  @Test
  void shardsAreTheCrc32OfTheKeySoOtherLanguagesRouteAlike() {
    // PHP: crc32("order-42") % 4 == 1475806942 % 4 == 2
    assertThat(Shards.shardOf("order-42", 4)).isEqualTo((int) (1475806942L % 4));
    assertThat(Shards.queue("orders", 3)).isEqualTo("orders.3");
  }

  @Test
  void waitStepsNeverShortenADelay() {
    assertThat(RetryQueues.stepMillis(Duration.ofMillis(1))).isEqualTo(100);
    assertThat(RetryQueues.stepMillis(Duration.ofMillis(1_000))).isEqualTo(1_000);
    assertThat(RetryQueues.stepMillis(Duration.ofMillis(1_050))).isEqualTo(2_000);
    assertThat(RetryQueues.stepMillis(Duration.ofNanos(1_000_000_001))).isEqualTo(2_000);
    assertThat(RetryQueues.stepMillis(Duration.ofMinutes(61))).isEqualTo(7_200_000);
    assertThat(RetryQueues.stepMillis(RetryQueues.LONGEST_DELAY)).isEqualTo(86_400_000);
  }

  private static Map<String, String> with(String key, String value) {
    Map<String, String> m = new java.util.HashMap<>(MINIMAL);
    m.put(key, value);
    return m;
  }
}
