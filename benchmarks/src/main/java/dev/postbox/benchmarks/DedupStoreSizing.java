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
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.test.TestRecord;

/**
 * Measures the on-disk size per id of the deduplicator's RocksDB stores, beside a naive peer in the
 * same run: one key-value store of id → first seen, with no expiry index (so its purge must scan
 * everything). The difference is what the expiry index costs.
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
    Topology naive = naive();
    System.out.printf("ids: %,d random UUIDs (36 chars), no compression, after flush%n", ids);
    System.out.printf("%-46s %14s %10s%n", "store", "bytes on disk", "bytes/id");
    report("postbox (ids + expiry index, 2 stores)", postbox, ids);
    report("naive peer (ids only, 1 store, full-scan purge)", naive, ids);
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
      System.out.printf("%-46s %,14d %10.1f%n", name, bytes, bytes / (double) ids);
    }
  }

  private static Topology naive() {
    StoreBuilder<KeyValueStore<String, Long>> store =
        Stores.keyValueStoreBuilder(
            Stores.persistentKeyValueStore("naive-ids"), Serdes.String(), Serdes.Long());
    Topology t = new Topology();
    t.addSource("in", Serdes.ByteArray().deserializer(), Serdes.ByteArray().deserializer(), "in");
    t.addProcessor("naive", NaiveDedup::new, "in");
    t.addStateStore(store, "naive");
    t.addSink(
        "out", "out", Serdes.ByteArray().serializer(), Serdes.ByteArray().serializer(), "naive");
    return t;
  }

  /** Remembers ids in one store; purging would have to scan all of it. */
  private static final class NaiveDedup implements Processor<byte[], byte[], byte[], byte[]> {
    private ProcessorContext<byte[], byte[]> context;
    private KeyValueStore<String, Long> ids;

    @Override
    public void init(ProcessorContext<byte[], byte[]> context) {
      this.context = context;
      this.ids = context.getStateStore("naive-ids");
    }

    @Override
    public void process(Record<byte[], byte[]> record) {
      String id = new String(record.headers().lastHeader("ce_id").value(), StandardCharsets.UTF_8);
      if (ids.putIfAbsent(id, record.timestamp()) == null) {
        context.forward(record);
      }
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
