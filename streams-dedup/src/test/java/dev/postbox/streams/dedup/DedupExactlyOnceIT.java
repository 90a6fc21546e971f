package dev.postbox.streams.dedup;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.broker.kafka.testing.KafkaTestBroker;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
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
 * The deduplicator as a real process against a real broker, with exactly-once: 100,000 records with
 * 20% duplicates, the process killed with SIGKILL twice mid-stream and restarted. The output, read
 * with {@code read_committed}, holds every id exactly once.
 */
class DedupExactlyOnceIT {

  private static final KafkaTestBroker KAFKA = KafkaTestBroker.shared();
  private static final int UNIQUE = 80_000;
  private static final int DUPLICATES = 20_000;

  @Test
  void everyIdExactlyOnceThroughTwoKills() throws Exception {
    String run = UUID.randomUUID().toString().substring(0, 8);
    String in = "dedup-in-" + run;
    String out = "dedup-out-" + run;
    String errors = "dedup-errors-" + run;
    KAFKA.createTopic(in, 4);
    KAFKA.createTopic(out, 4);
    KAFKA.createTopic(errors, 1);
    produce(in);

    Path dir = Files.createTempDirectory("dedup-app-");
    Path props = dir.resolve("dedup.properties");
    Properties p = new Properties();
    p.setProperty("application.id", "dedup-eos-" + run);
    p.setProperty("bootstrap.servers", KAFKA.bootstrapServers());
    p.setProperty("state.dir", dir.resolve("state").toString());
    p.setProperty("input.topic", in);
    p.setProperty("output.topic", out);
    p.setProperty("error.topic", errors);
    p.setProperty("dedup.window", "1h");
    p.setProperty("consumer.session.timeout.ms", "3000");
    p.setProperty("consumer.heartbeat.interval.ms", "500");
    p.setProperty("producer.transaction.timeout.ms", "5000");
    p.setProperty("commit.interval.ms", "100");
    try (OutputStream o = Files.newOutputStream(props)) {
      p.store(o, "dedup IT");
    }

    Map<String, Integer> seen = new HashMap<>();
    int kills = 0;
    try (KafkaConsumer<byte[], byte[]> reader = committedReader(out)) {
      Process app = startApp(props, dir.resolve("app-0.log"));
      try {
        for (int threshold : new int[] {UNIQUE / 4, UNIQUE * 3 / 5}) {
          readUntil(reader, seen, threshold, Duration.ofMinutes(2));
          app.destroyForcibly(); // SIGKILL, mid-transaction most likely
          app.waitFor(30, TimeUnit.SECONDS);
          kills++;
          app = startApp(props, dir.resolve("app-" + kills + ".log"));
        }
        readUntil(reader, seen, UNIQUE, Duration.ofMinutes(3));
        // Anything doubled would arrive with the rest; read a little longer to be sure.
        readFor(reader, seen, Duration.ofSeconds(5));
      } finally {
        app.destroyForcibly();
        app.waitFor(30, TimeUnit.SECONDS);
      }
    }

    assertThat(kills).isEqualTo(2);
    List<String> doubled =
        seen.entrySet().stream().filter(e -> e.getValue() > 1).map(Map.Entry::getKey).toList();
    assertThat(doubled).as("ids in the output more than once").isEmpty();
    assertThat(seen).as("distinct ids in the output").hasSize(UNIQUE);
    try (KafkaConsumer<byte[], byte[]> errorReader = committedReader(errors)) {
      assertThat(errorReader.poll(Duration.ofSeconds(2)).count())
          .as("records without an id")
          .isZero();
    }
  }

  private static void produce(String topic) {
    List<Integer> order = new ArrayList<>();
    for (int i = 0; i < UNIQUE; i++) {
      order.add(i);
    }
    Random random = new Random(7);
    for (int i = 0; i < DUPLICATES; i++) {
      order.add(random.nextInt(UNIQUE));
    }
    Collections.shuffle(order, random);
    // Whichever copy of an id comes first is the original; the others are its duplicates.
    List<byte[]> ids = new ArrayList<>(order.size());
    for (int n : order) {
      ids.add(("id-" + n).getBytes(StandardCharsets.UTF_8));
    }
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(
            Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                KAFKA.bootstrapServers(),
                ProducerConfig.LINGER_MS_CONFIG,
                "10",
                ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG,
                ByteArraySerializer.class,
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG,
                ByteArraySerializer.class))) {
      for (byte[] id : ids) {
        ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, id, id);
        r.headers().add("ce_id", id);
        producer.send(r);
      }
      producer.flush();
    }
  }

  private static Process startApp(Path props, Path log) throws IOException {
    return new ProcessBuilder(
            Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "-Xmx512m",
            "-cp",
            System.getProperty("java.class.path"),
            DedupApp.class.getName(),
            props.toString())
        .redirectErrorStream(true)
        .redirectOutput(log.toFile())
        .start();
  }

  private static KafkaConsumer<byte[], byte[]> committedReader(String topic) {
    KafkaConsumer<byte[], byte[]> c =
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
                ByteArrayDeserializer.class));
    c.subscribe(List.of(topic));
    return c;
  }

  private static void readUntil(
      KafkaConsumer<byte[], byte[]> reader, Map<String, Integer> seen, int distinct, Duration max) {
    long deadline = System.nanoTime() + max.toNanos();
    while (seen.size() < distinct && System.nanoTime() < deadline) {
      read(reader, seen);
    }
    assertThat(seen.size()).as("distinct ids read within %s", max).isGreaterThanOrEqualTo(distinct);
  }

  private static void readFor(
      KafkaConsumer<byte[], byte[]> reader, Map<String, Integer> seen, Duration period) {
    long until = System.nanoTime() + period.toNanos();
    while (System.nanoTime() < until) {
      read(reader, seen);
    }
  }

  private static void read(KafkaConsumer<byte[], byte[]> reader, Map<String, Integer> seen) {
    for (ConsumerRecord<byte[], byte[]> r : reader.poll(Duration.ofMillis(200))) {
      seen.merge(new String(r.value(), StandardCharsets.UTF_8), 1, Integer::sum);
    }
  }
}
