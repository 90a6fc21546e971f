package dev.postbox.broker.kafka;

import static dev.postbox.broker.kafka.KafkaTestSupport.event;
import static dev.postbox.broker.kafka.KafkaTestSupport.open;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.postbox.broker.kafka.testing.KafkaTestBroker;
import dev.postbox.spi.Broker;
import dev.postbox.spi.Consumer;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.MalformedMessageException;
import dev.postbox.spi.PermanentBrokerException;
import dev.postbox.spi.RetriableBrokerException;
import dev.postbox.spi.Subscription;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

/** Kafka-specific behaviour beyond the conformance suite, against the real broker. */
class KafkaAdapterIT {

  private static final KafkaTestBroker KAFKA = KafkaTestBroker.shared();

  @Test
  void aRecordTheBrokerFindsTooLargeIsAPermanentError() {
    String topic = "small-" + UUID.randomUUID();
    KAFKA.createTopic(topic, 1, Map.of("max.message.bytes", "20000"));
    try (Broker broker = open(KAFKA.bootstrapServers())) {
      Envelope big =
          Envelope.builder().source("urn:test").type("Big").payload(new byte[50_000]).build();
      // The adapter's own limit (1 MB) lets it through; the topic's limit does not.
      PermanentBrokerException e =
          catchThrowableOfType(
              PermanentBrokerException.class, () -> broker.publisher().publish(topic, big));
      assertThat(e).hasMessageContaining("RecordTooLargeException");
    }
  }

  @Test
  void theRedeliveryHorizonIsTheTopicsRetentionPlusASegmentsSpan() {
    String days = "days-" + UUID.randomUUID();
    KAFKA.createTopic(
        days,
        1,
        Map.of(
            "retention.ms",
            Long.toString(Duration.ofDays(3).toMillis()),
            "segment.ms",
            Long.toString(Duration.ofHours(6).toMillis())));
    String defaults = "defaults-" + UUID.randomUUID();
    KAFKA.createTopic(defaults, 1, Map.of());
    String forever = "forever-" + UUID.randomUUID();
    KAFKA.createTopic(forever, 1, Map.of("retention.ms", "-1"));
    try (Broker broker = open(KAFKA.bootstrapServers())) {
      assertThat(broker.redeliveryHorizon(days)).contains(Duration.ofDays(3).plusHours(6));
      // no topic settings: the broker's defaults, 7 days of retention and 7-day segments
      assertThat(broker.redeliveryHorizon(defaults)).contains(Duration.ofDays(14));
      assertThat(broker.redeliveryHorizon(forever))
          .contains(java.time.temporal.ChronoUnit.FOREVER.getDuration());
    }
  }

  @Test
  void anUnreachableClusterFailsRetriablyWithinTheConfiguredTimeout() {
    try (Broker broker =
        open(KafkaTestBroker.unreachableBootstrapServers(), "publish.timeout", "2s")) {
      long started = System.nanoTime();
      assertThatThrownBy(() -> broker.publisher().publish("nowhere", event("k", 1)))
          .isInstanceOf(RetriableBrokerException.class);
      Duration took = Duration.ofNanos(System.nanoTime() - started);
      assertThat(took).isBetween(Duration.ofMillis(1_500), Duration.ofSeconds(5));
    }
  }

  @Test
  void aBatchOfManyKeysToAnUnreachableClusterWaitsForMetadataOnceNotOncePerKey() {
    // The producer returns its metadata timeout as a failed future after max.block.ms; before,
    // the adapter sent the next key and waited again, so a batch of 20 keys took 20 timeouts.
    try (Broker broker =
        open(KafkaTestBroker.unreachableBootstrapServers(), "publish.timeout", "1s")) {
      List<Envelope> batch = new ArrayList<>();
      for (int i = 0; i < 20; i++) {
        batch.add(event("key-" + i, i));
      }
      long started = System.nanoTime();
      dev.postbox.spi.BatchPublishException e =
          catchThrowableOfType(
              dev.postbox.spi.BatchPublishException.class,
              () -> broker.publisher().publishAll("nowhere", batch));
      Duration took = Duration.ofNanos(System.nanoTime() - started);
      assertThat(e.failures()).hasSize(20);
      assertThat(e.failures().values()).allMatch(f -> f.isRetriable());
      assertThat(took).isLessThan(Duration.ofSeconds(5));
    }
  }

  @Test
  void aForeignRecordIsHandedOverAsMalformedAndTheConsumerGoesOn() {
    String topic = "foreign-" + UUID.randomUUID();
    KAFKA.createTopic(topic, 1);
    try (KafkaProducer<byte[], byte[]> raw =
            new KafkaProducer<>(
                Map.of(
                    ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, KAFKA.bootstrapServers(),
                    ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class,
                    ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class));
        Broker broker = open(KAFKA.bootstrapServers())) {
      Consumer consumer = broker.subscribe(Subscription.of(topic, "g"));
      raw.send(
          new ProducerRecord<>(topic, "not json, no headers".getBytes(StandardCharsets.UTF_8)));
      raw.flush();
      Envelope good = event("k", 2);
      broker.publisher().publish(topic, good);

      List<Delivery> got = new ArrayList<>();
      long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      while (got.size() < 2 && System.nanoTime() < deadline) {
        got.addAll(consumer.poll(2, Duration.ofMillis(200)));
      }
      assertThat(got).hasSize(2);
      MalformedMessageException malformed =
          catchThrowableOfType(MalformedMessageException.class, () -> got.get(0).envelope());
      assertThat(malformed.reason()).contains("no ce_specversion");
      assertThat(new String(malformed.rawPayload(), StandardCharsets.UTF_8))
          .isEqualTo("not json, no headers");
      got.get(0).ack();
      assertThat(got.get(1).envelope()).isEqualTo(good);
      got.get(1).ack();
      consumer.close();
    }
  }
}
