package dev.postbox.streams.dedup;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.broker.kafka.testing.KafkaTestBroker;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.junit.jupiter.api.Test;

/**
 * A second deduplicator instance joins mid-stream: Kafka Streams splits the partitions (and so the
 * stores) between the two, and the output still holds every id exactly once.
 */
class DedupScaleOutIT {

  private static final KafkaTestBroker KAFKA = KafkaTestBroker.shared();

  @Test
  void aSecondInstanceTakesPartitionsAndTheOutputStaysCorrect() throws Exception {
    String run = UUID.randomUUID().toString().substring(0, 8);
    String in = "scale-in-" + run;
    String out = "scale-out-" + run;
    KAFKA.createTopic(in, 4);
    KAFKA.createTopic(out, 4);
    KAFKA.createTopic("scale-errors-" + run, 1);

    try (KafkaProducer<byte[], byte[]> producer = producer()) {
      Random random = new Random(3);
      KafkaStreams first = start(run, in, out);
      KafkaStreams second = null;
      try {
        for (int i = 0; i < 20_000; i++) {
          // One in five records repeats an earlier id.
          int n = (i % 5 == 4 && i > 0) ? random.nextInt(i) : i;
          byte[] id = ("id-" + n).getBytes(StandardCharsets.UTF_8);
          ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(in, id, id);
          r.headers().add("ce_id", id);
          producer.send(r);
          if (i == 8_000) {
            producer.flush();
            second = start(run, in, out);
          }
        }
        producer.flush();
        KafkaStreams joined = second;
        await().atMost(Duration.ofSeconds(60)).until(() -> hasTasks(first) && hasTasks(joined));
        assertThat(hasTasks(first)).as("first instance owns partitions").isTrue();
        assertThat(hasTasks(joined)).as("second instance owns partitions").isTrue();

        Map<String, Integer> seen = readAll(out, expectedDistinct(), Duration.ofSeconds(90));
        assertThat(seen).hasSize(expectedDistinct());
        assertThat(seen.values()).as("each id once").allMatch(n -> n == 1);
      } finally {
        first.close(Duration.ofSeconds(10));
        if (second != null) {
          second.close(Duration.ofSeconds(10));
        }
      }
    }
  }

  private static int expectedDistinct() {
    Random random = new Random(3);
    java.util.Set<Integer> ids = new java.util.HashSet<>();
    for (int i = 0; i < 20_000; i++) {
      ids.add((i % 5 == 4 && i > 0) ? random.nextInt(i) : i);
    }
    return ids.size();
  }

  private static boolean hasTasks(KafkaStreams streams) {
    return streams != null
        && streams.state() == KafkaStreams.State.RUNNING
        && streams.metadataForLocalThreads().stream().mapToInt(t -> t.activeTasks().size()).sum()
            > 0;
  }

  private static KafkaStreams start(String run, String in, String out) throws Exception {
    Properties p = new Properties();
    p.setProperty("application.id", "dedup-scale-" + run);
    p.setProperty("bootstrap.servers", KAFKA.bootstrapServers());
    p.setProperty("state.dir", Files.createTempDirectory("dedup-scale-").toString());
    p.setProperty("input.topic", in);
    p.setProperty("output.topic", out);
    p.setProperty("error.topic", "scale-errors-" + run);
    p.setProperty("dedup.window", "1h");
    p.setProperty("commit.interval.ms", "100");
    return DedupApp.start(p);
  }

  private static KafkaProducer<byte[], byte[]> producer() {
    return new KafkaProducer<>(
        Map.of(
            ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, KAFKA.bootstrapServers(),
            ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class,
            ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class));
  }

  private static Map<String, Integer> readAll(String topic, int distinct, Duration max) {
    Map<String, Integer> seen = new HashMap<>();
    try (KafkaConsumer<byte[], byte[]> c =
        new KafkaConsumer<>(
            Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                KAFKA.bootstrapServers(),
                ConsumerConfig.GROUP_ID_CONFIG,
                "reader-" + UUID.randomUUID(),
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG,
                "earliest",
                ConsumerConfig.ISOLATION_LEVEL_CONFIG,
                "read_committed",
                ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG,
                ByteArrayDeserializer.class,
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG,
                ByteArrayDeserializer.class))) {
      c.subscribe(List.of(topic));
      long deadline = System.nanoTime() + max.toNanos();
      long quietUntil = Long.MAX_VALUE;
      while (System.nanoTime() < deadline && System.nanoTime() < quietUntil) {
        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
          seen.merge(new String(r.value(), StandardCharsets.UTF_8), 1, Integer::sum);
        }
        if (seen.size() >= distinct && quietUntil == Long.MAX_VALUE) {
          quietUntil = System.nanoTime() + Duration.ofSeconds(3).toNanos(); // catch late doubles
        }
      }
    }
    return seen;
  }
}
