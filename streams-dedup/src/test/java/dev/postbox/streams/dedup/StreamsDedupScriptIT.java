package dev.postbox.streams.dedup;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.broker.kafka.testing.KafkaTestBroker;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

/**
 * The README's way to run the deduplicator, {@code scripts/streams-dedup.sh FILE}, from a directory
 * other than the repository's root with a file named relative to it (it failed with "Could not find
 * the selected project in the reactor"): a repeated id comes out once.
 */
class StreamsDedupScriptIT {

  private static final KafkaTestBroker KAFKA = KafkaTestBroker.shared();

  @Test
  void theScriptRunsFromAnotherDirectoryWithARelativeFileAndDeduplicates() throws Exception {
    String run = UUID.randomUUID().toString().substring(0, 8);
    String in = "script-in-" + run;
    String out = "script-out-" + run;
    KAFKA.createTopic(in, 1);
    KAFKA.createTopic(out, 1);
    KAFKA.createTopic("script-errors-" + run, 1);
    Path cwd = Files.createTempDirectory("elsewhere-");
    Files.writeString(
        cwd.resolve("my-dedup.properties"),
        String.join(
            "\n",
            "application.id=script-" + run,
            "bootstrap.servers=" + KAFKA.bootstrapServers(),
            "state.dir=" + cwd.resolve("state"),
            "input.topic=" + in,
            "output.topic=" + out,
            "error.topic=script-errors-" + run,
            "dedup.window=1h",
            "commit.interval.ms=100"));
    Path script = Path.of(System.getProperty("postbox.root"), "scripts", "streams-dedup.sh");
    Process app =
        new ProcessBuilder(
                "bash", script.toAbsolutePath().normalize().toString(), "my-dedup.properties")
            .directory(cwd.toFile())
            .redirectErrorStream(true)
            .redirectOutput(cwd.resolve("app.log").toFile())
            .start();
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(
            Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, KAFKA.bootstrapServers(),
                ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class,
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class))) {
      for (String id : List.of("a", "b", "a")) {
        byte[] bytes = id.getBytes(StandardCharsets.UTF_8);
        ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(in, bytes, bytes);
        r.headers().add("ce_id", bytes);
        producer.send(r).get();
      }
      List<String> seen = read(out, 2, Duration.ofSeconds(90));
      assertThat(app.isAlive()).as(Files.readString(cwd.resolve("app.log"))).isTrue();
      assertThat(seen).containsExactly("a", "b");
    } finally {
      app.destroy();
      app.waitFor();
    }
  }

  /** Reads until {@code n} records came, then a second more for any that should not have. */
  private static List<String> read(String topic, int n, Duration max) {
    List<String> seen = new ArrayList<>();
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
      long until = deadline;
      while (System.nanoTime() < until) {
        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
          seen.add(new String(r.value(), StandardCharsets.UTF_8));
        }
        if (seen.size() >= n && until == deadline) {
          until = System.nanoTime() + Duration.ofSeconds(1).toNanos();
        }
      }
    }
    return seen;
  }
}
