package dev.postbox.benchmarks;

import dev.postbox.streams.dedup.DedupSettings;
import dev.postbox.streams.dedup.DedupTopology;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Properties;
import java.util.UUID;
import java.util.stream.Stream;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.test.TestRecord;

/**
 * Measures the on-disk size per id of the deduplicator's RocksDB store, beside Kafka Streams'
 * canonical dedup in the same run ({@link WindowStoreDedup}: a window store of id text →
 * timestamp). Both run in a {@link TopologyTestDriver} on their real RocksDB stores, Kafka Streams'
 * own RocksDB options (no compression), and are measured as SST bytes after a flush.
 *
 * <p>Run: {@code ./mvnw -q -pl benchmarks -am install -DskipTests && ./mvnw -q -pl benchmarks
 * exec:java -Dexec.mainClass=dev.postbox.benchmarks.DedupStoreSizing -Dexec.args=200000}
 */
public final class DedupStoreSizing {

  private DedupStoreSizing() {}

  public static void main(String[] args) {
    int ids = args.length > 0 ? Integer.parseInt(args[0]) : 200_000;
    Topology postbox =
        DedupTopology.build(DedupSettings.of("in", "out", "errors", Duration.ofDays(1)));
    Topology window = WindowStoreDedup.topology(Duration.ofDays(1));
    System.out.printf("ids: %,d random UUIDs (36 chars), no compression, after flush%n", ids);
    System.out.printf("%-50s %14s %10s%n", "store", "bytes on disk", "bytes/id");
    report("postbox (1 store, 16-byte ids, swept)", postbox, ids);
    report("Kafka Streams WindowStore dedup (id text)", window, ids);
  }

  private static void report(String name, Topology topology, int ids) {
    Path dir = tempDir();
    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, "sizing");
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
    p.put(StreamsConfig.STATE_DIR_CONFIG, dir.toString());
    try (TopologyTestDriver driver = new TopologyTestDriver(topology, p)) {
      TestInputTopic<byte[], byte[]> in =
          driver.createInputTopic("in", new ByteArraySerializer(), new ByteArraySerializer());
      Instant t = Instant.parse("2026-01-01T00:00:00Z");
      for (int i = 0; i < ids; i++) {
        byte[] id = UUID.randomUUID().toString().getBytes(StandardCharsets.UTF_8);
        RecordHeaders h = new RecordHeaders();
        h.add("ce_id", id);
        in.pipeInput(new TestRecord<>(id, new byte[0], h, t.plusMillis(i)));
      }
      driver.getAllStateStores().values().forEach(s -> s.flush());
      long bytes = sstBytes(dir);
      System.out.printf("%-50s %,14d %10.1f%n", name, bytes, bytes / (double) ids);
    }
  }

  private static long sstBytes(Path dir) {
    try (Stream<Path> files = Files.walk(dir)) {
      return files
          .filter(f -> f.toString().endsWith(".sst"))
          .mapToLong(f -> f.toFile().length())
          .sum();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static Path tempDir() {
    try {
      return Files.createTempDirectory("dedup-sizing-");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
