package dev.postbox.benchmarks;

import dev.postbox.broker.kafka.testing.KafkaTestBroker;
import dev.postbox.streams.dedup.DedupSettings;
import dev.postbox.streams.dedup.DedupTopology;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;

/**
 * The Streams deduplicator's throughput on a real broker, beside two peers in the same run and on
 * the same input topic: a pass-through topology (input → output, nothing else: the ceiling), and
 * Kafka Streams' canonical {@link WindowStoreDedup}. Every topology runs with {@code
 * exactly_once_v2}, its own application id and output topic. The input holds {@code n} records over
 * 4 partitions: 90% new UUID ids, 10% copies of a recent one (same key, so same partition). The
 * clock runs from the first output record to the last, read with {@code read_committed}; each
 * topology runs {@code rounds} times, interleaved, and the median is reported.
 *
 * <p>Run: {@code ./mvnw -q -pl benchmarks -am install -DskipTests && ./mvnw -q -pl benchmarks
 * exec:java -Dexec.mainClass=dev.postbox.benchmarks.StreamsDedupBenchmark -Dexec.args="200000 3"}
 */
public final class StreamsDedupBenchmark {

  private StreamsDedupBenchmark() {}

  public static void main(String[] args) throws Exception {
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 200_000;
    int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
    try (KafkaTestBroker kafka = KafkaTestBroker.start()) {
      String input = "streams-bench-in";
      kafka.createTopic(input, 4);
      int unique = produce(kafka, input, n);
      System.out.printf(
          "streams dedup: %,d records (%,d unique ids), 4 partitions, exactly_once_v2, %d cores,"
              + " median of %d%n",
          n, unique, Runtime.getRuntime().availableProcessors(), rounds);
      String[] names = {"pass-through (ceiling)", "postbox streams-dedup", "WindowStore dedup"};
      double[][] rates = new double[names.length][rounds];
      for (int r = 0; r < rounds; r++) {
        for (int c = 0; c < names.length; c++) {
          String output = "streams-bench-out-" + c + "-" + r;
          kafka.createTopic(output, 4);
          Topology t =
              switch (c) {
                case 0 -> passThrough(input, output);
                case 1 ->
                    DedupTopology.build(
                        DedupSettings.of(input, output, output + "-errors", Duration.ofHours(1)));
                default -> WindowStoreDedup.topology(Duration.ofHours(1), input, output);
              };
          int expected = c == 0 ? n : unique;
          rates[c][r] = n / run(kafka, t, "bench-" + c + "-" + r, output, expected);
        }
      }
      System.out.printf("%-28s %14s %10s %s%n", "topology", "records/s", "x ceiling", "runs");
      double ceiling = median(rates[0]);
      for (int c = 0; c < names.length; c++) {
        System.out.printf(
            "%-28s %,14.0f %10.2f %s%n",
            names[c], median(rates[c]), median(rates[c]) / ceiling, Arrays.toString(rates[c]));
      }
    }
  }

  private static Topology passThrough(String input, String output) {
    Topology t = new Topology();
    t.addSource("in", Serdes.ByteArray().deserializer(), Serdes.ByteArray().deserializer(), input);
    t.addSink(
        "out", output, Serdes.ByteArray().serializer(), Serdes.ByteArray().serializer(), "in");
    return t;
  }

  /** Seconds from the first output record to the last. */
  private static double run(
      KafkaTestBroker kafka, Topology topology, String app, String output, int expected)
      throws Exception {
    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
    p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    p.put(StreamsConfig.STATE_DIR_CONFIG, Files.createTempDirectory("streams-bench-").toString());
    p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
    try (KafkaStreams streams = new KafkaStreams(topology, p);
        KafkaConsumer<byte[], byte[]> reader = reader(kafka, output)) {
      streams.start();
      long first = 0;
      long last = 0;
      int seen = 0;
      long deadline = System.nanoTime() + Duration.ofMinutes(5).toNanos();
      while (seen < expected) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException(app + ": " + seen + " of " + expected + " records");
        }
        ConsumerRecords<byte[], byte[]> records = reader.poll(Duration.ofMillis(100));
        if (!records.isEmpty()) {
          long now = System.nanoTime();
          first = first == 0 ? now : first;
          last = now;
          seen += records.count();
        }
      }
      if (seen != expected) {
        throw new IllegalStateException(app + ": " + seen + " records, expected " + expected);
      }
      streams.close(Duration.ofSeconds(30));
      return (last - first) / 1e9;
    }
  }

  private static KafkaConsumer<byte[], byte[]> reader(KafkaTestBroker kafka, String topic) {
    KafkaConsumer<byte[], byte[]> c =
        new KafkaConsumer<>(
            Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                kafka.bootstrapServers(),
                ConsumerConfig.GROUP_ID_CONFIG,
                "reader-" + UUID.randomUUID(),
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG,
                "earliest",
                ConsumerConfig.ISOLATION_LEVEL_CONFIG,
                "read_committed",
                ConsumerConfig.MAX_POLL_RECORDS_CONFIG,
                10_000),
            new ByteArrayDeserializer(),
            new ByteArrayDeserializer());
    c.subscribe(List.of(topic));
    return c;
  }

  /** Produces {@code n} records, 10% of them copies of a recent one; returns the unique count. */
  private static int produce(KafkaTestBroker kafka, String topic, int n) {
    Random random = new Random(42);
    List<String> recent = new ArrayList<>();
    int unique = 0;
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(
            Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                kafka.bootstrapServers(),
                ProducerConfig.LINGER_MS_CONFIG,
                5,
                ProducerConfig.BATCH_SIZE_CONFIG,
                256 * 1024),
            new ByteArraySerializer(),
            new ByteArraySerializer())) {
      byte[] value = new byte[200];
      for (int i = 0; i < n; i++) {
        String id;
        if (i > 0 && random.nextInt(10) == 0) {
          id = recent.get(random.nextInt(recent.size()));
        } else {
          id = new UUID(random.nextLong(), random.nextLong()).toString();
          unique++;
          if (recent.size() < 1_000) {
            recent.add(id);
          } else {
            recent.set(random.nextInt(recent.size()), id);
          }
        }
        byte[] bytes = id.getBytes(StandardCharsets.UTF_8);
        ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, bytes, value);
        r.headers().add("ce_id", bytes);
        producer.send(r);
      }
      producer.flush();
    }
    return unique;
  }

  private static double median(double[] values) {
    double[] v = values.clone();
    Arrays.sort(v);
    return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
  }
}
