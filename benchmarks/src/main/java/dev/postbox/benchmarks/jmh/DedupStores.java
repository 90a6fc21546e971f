package dev.postbox.benchmarks.jmh;

import dev.postbox.benchmarks.WindowStoreDedup;
import dev.postbox.streams.dedup.DedupSettings;
import dev.postbox.streams.dedup.DedupTopology;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.Properties;
import java.util.UUID;
import java.util.stream.Stream;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.test.TestRecord;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.BloomFilter;
import org.rocksdb.CompactionStyle;
import org.rocksdb.CompressionType;
import org.rocksdb.LRUCache;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.WriteOptions;

/**
 * The on-disk contenders of the dedup benchmarks, behind {@link DedupSets}' question, each on its
 * real store in a temporary directory: raw RocksDB with the options Kafka Streams gives its stores,
 * the Streams deduplicator's processor, and Kafka Streams' canonical window-store dedup (both in a
 * {@link TopologyTestDriver}, so each id is a record through the processor and its RocksDB store,
 * with no broker).
 */
public interface DedupStores extends DedupSets, AutoCloseable {

  @Override
  void close();

  /** A contender by name. */
  static DedupStores of(String name) {
    return switch (name) {
      case "rocksdb" -> rocksDb();
      case "streams-dedup" ->
          topology(
              DedupTopology.build(DedupSettings.of("in", "out", "errors", Duration.ofHours(1))));
      case "window-store" -> topology(WindowStoreDedup.topology(Duration.ofHours(1)));
      default -> throw new IllegalArgumentException("no contender named " + name);
    };
  }

  /**
   * RocksDB with Kafka Streams' store options (block-based table, 50 MB LRU block cache, 4 KB
   * blocks, bloom filter, 16 MB write buffers × 3, universal compaction, no compression, no WAL):
   * key the id's 16 bytes, value the 8-byte time first seen.
   */
  static DedupStores rocksDb() {
    RocksDB.loadLibrary();
    Path dir = tempDir();
    LRUCache cache = new LRUCache(50L * 1024 * 1024);
    BloomFilter filter = new BloomFilter();
    BlockBasedTableConfig table = new BlockBasedTableConfig();
    table.setBlockCache(cache);
    table.setBlockSize(4096L);
    table.setFilterPolicy(filter);
    Options options =
        new Options()
            .setCreateIfMissing(true)
            .setTableFormatConfig(table)
            .setWriteBufferSize(16L * 1024 * 1024)
            .setMaxWriteBufferNumber(3)
            .setCompactionStyle(CompactionStyle.UNIVERSAL)
            .setCompressionType(CompressionType.NO_COMPRESSION)
            .setIncreaseParallelism(Math.max(Runtime.getRuntime().availableProcessors(), 2));
    WriteOptions write = new WriteOptions().setDisableWAL(true);
    RocksDB db;
    try {
      db = RocksDB.open(options, dir.toString());
    } catch (RocksDBException e) {
      throw new IllegalStateException(e);
    }
    byte[] value = new byte[8];
    return new DedupStores() {
      private long clock;

      @Override
      public boolean seenOrRecord(long hi, long lo) {
        byte[] key = ByteBuffer.allocate(16).putLong(hi).putLong(lo).array();
        try {
          if (db.get(key) != null) {
            return true;
          }
          ByteBuffer.wrap(value).putLong(clock++);
          db.put(write, key, value);
          return false;
        } catch (RocksDBException e) {
          throw new IllegalStateException(e);
        }
      }

      @Override
      public void close() {
        db.close();
        write.close();
        options.close();
        filter.close();
        cache.close();
        delete(dir);
      }
    };
  }

  /**
   * A topology reading {@code in} (ids in {@code ce_id}) and writing first sightings to {@code
   * out}.
   */
  static DedupStores topology(Topology topology) {
    Path dir = tempDir();
    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, "jmh-dedup");
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
    p.put(StreamsConfig.STATE_DIR_CONFIG, dir.toString());
    TopologyTestDriver driver = new TopologyTestDriver(topology, p);
    TestInputTopic<byte[], byte[]> in =
        driver.createInputTopic("in", new ByteArraySerializer(), new ByteArraySerializer());
    TestOutputTopic<byte[], byte[]> out =
        driver.createOutputTopic("out", new ByteArrayDeserializer(), new ByteArrayDeserializer());
    Instant start = Instant.parse("2026-01-01T00:00:00Z");
    byte[] value = new byte[0];
    return new DedupStores() {
      private long clock;

      @Override
      public boolean seenOrRecord(long hi, long lo) {
        byte[] id = new UUID(hi, lo).toString().getBytes(StandardCharsets.UTF_8);
        RecordHeaders h = new RecordHeaders();
        h.add("ce_id", id);
        // A millisecond per id: the punctuators run (a purge every 60,000 ids for the
        // deduplicator, segments rolled every 30 minutes' worth for the window store), while every
        // id of a run stays inside the 1-hour window (3.6M ids).
        in.pipeInput(new TestRecord<>(id, value, h, start.plusMillis(clock++)));
        if (out.isEmpty()) {
          return true;
        }
        out.readRecord();
        return false;
      }

      @Override
      public void close() {
        driver.close();
        delete(dir);
      }
    };
  }

  private static Path tempDir() {
    try {
      return Files.createTempDirectory("jmh-dedup-store-");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static void delete(Path dir) {
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
