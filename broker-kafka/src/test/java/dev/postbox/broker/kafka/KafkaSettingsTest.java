package dev.postbox.broker.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.spi.Brokers;
import dev.postbox.spi.ConfigException;
import java.util.Map;
import org.junit.jupiter.api.Test;

class KafkaSettingsTest {

  private static final String BOOTSTRAP = "localhost:1";

  @Test
  void isFoundByName() {
    assertThat(Brokers.available()).contains("kafka");
  }

  @Test
  void bootstrapServersAreRequired() {
    assertThatThrownBy(() -> KafkaSettings.from(Map.of()))
        .isInstanceOfSatisfying(
            ConfigException.class, e -> assertThat(e.key()).isEqualTo("bootstrap.servers"));
  }

  @Test
  void typosFailNamingTheKey() {
    assertThatThrownBy(
            () ->
                KafkaSettings.from(Map.of("bootstrap.servers", BOOTSTRAP, "publish.timout", "1s")))
        .isInstanceOfSatisfying(
            ConfigException.class, e -> assertThat(e.key()).isEqualTo("publish.timout"));
  }

  @Test
  void passThroughKeysMustBeKafkaProperties() {
    assertThatThrownBy(
            () ->
                KafkaSettings.from(
                    Map.of("bootstrap.servers", BOOTSTRAP, "kafka.linger.msec", "5")))
        .isInstanceOfSatisfying(
            ConfigException.class, e -> assertThat(e.key()).isEqualTo("kafka.linger.msec"));
    assertThatThrownBy(
            () ->
                KafkaSettings.from(
                    Map.of("bootstrap.servers", BOOTSTRAP, "kafka.consumer.linger.ms", "5")))
        .hasMessageContaining("'kafka.consumer.linger.ms' is not a Kafka property");
  }

  @Test
  void guaranteesCannotBeOverridden() {
    for (String key :
        new String[] {
          "kafka.acks",
          "kafka.producer.enable.idempotence",
          "kafka.consumer.enable.auto.commit",
          "kafka.group.id"
        }) {
      assertThatThrownBy(() -> KafkaSettings.from(Map.of("bootstrap.servers", BOOTSTRAP, key, "x")))
          .as(key)
          .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.key()).isEqualTo(key))
          .hasMessageContaining("managed by the adapter");
    }
  }

  @Test
  void invalidClientValuesFailAtStartupNamingTheKey() {
    assertThatThrownBy(
            () ->
                KafkaSettings.from(
                    Map.of("bootstrap.servers", BOOTSTRAP, "kafka.producer.linger.ms", "soon")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("linger.ms");
  }

  @Test
  void securitySettingsPassThroughToBothClients() {
    KafkaSettings s =
        KafkaSettings.from(
            Map.of(
                "bootstrap.servers", BOOTSTRAP,
                "kafka.security.protocol", "SASL_SSL",
                "kafka.sasl.mechanism", "PLAIN",
                "kafka.sasl.jaas.config",
                    "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"p\";"));
    assertThat(s.producerProperties()).containsEntry("security.protocol", "SASL_SSL");
    assertThat(s.consumerProperties()).containsEntry("sasl.mechanism", "PLAIN");
    assertThat(s.producerProperties())
        .containsEntry("acks", "all")
        .containsEntry("enable.idempotence", "true");
    assertThat(s.consumerProperties()).containsEntry("enable.auto.commit", "false");
  }

  @Test
  void publishTimeoutBoundsEveryBlockingProducerCall() {
    KafkaSettings s =
        KafkaSettings.from(Map.of("bootstrap.servers", BOOTSTRAP, "publish.timeout", "2s"));
    assertThat(s.producerProperties())
        .containsEntry("max.block.ms", "2000")
        .containsEntry("delivery.timeout.ms", "2000");
    assertThat(Long.parseLong((String) s.producerProperties().get("request.timeout.ms")))
        .isLessThan(2000);
  }
}
