package dev.postbox.streams.dedup;

import java.util.Map;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.state.Stores;

/**
 * Builds the deduplicator's topology: input topic → {@link DedupProcessor} → output topic, with
 * optional duplicates topic and the error topic for records without an id. Keys and values pass
 * through as bytes, headers included.
 *
 * <p>Duplicates must reach the same partition as their original, because each task holds the ids of
 * its own partitions. Republished events keep their key, so this holds when the key is the same;
 * otherwise re-key the input by id first.
 */
public final class DedupTopology {

  static final String SOURCE = "input";
  static final String PROCESSOR = "dedup";
  static final String OUTPUT_SINK = "output";
  static final String DUPLICATES_SINK = "duplicates";
  static final String ERRORS_SINK = "errors";

  /**
   * Id key → first seen. Named anew for the 16-byte keys: the string-keyed {@code
   * postbox-dedup-ids} and {@code postbox-dedup-expiry} of earlier versions are left unused.
   */
  static final String SEEN_STORE = "postbox-dedup-seen";

  private DedupTopology() {}

  public static Topology build(DedupSettings settings) {
    Topology t = new Topology();
    t.addSource(
        SOURCE,
        Serdes.ByteArray().deserializer(),
        Serdes.ByteArray().deserializer(),
        settings.inputTopic());
    t.addProcessor(PROCESSOR, () -> new DedupProcessor(settings), SOURCE);
    // Persistent (RocksDB) and changelogged, so a restarted or moved task restores its ids.
    Map<String, String> changelog = Map.of("cleanup.policy", "compact");
    t.addStateStore(
        Stores.keyValueStoreBuilder(
                Stores.persistentKeyValueStore(SEEN_STORE), Serdes.Bytes(), Serdes.Long())
            .withLoggingEnabled(changelog),
        PROCESSOR);
    t.addSink(
        OUTPUT_SINK,
        settings.outputTopic(),
        Serdes.ByteArray().serializer(),
        Serdes.ByteArray().serializer(),
        PROCESSOR);
    t.addSink(
        ERRORS_SINK,
        settings.errorTopic(),
        Serdes.ByteArray().serializer(),
        Serdes.ByteArray().serializer(),
        PROCESSOR);
    if (settings.duplicatesTopic() != null) {
      t.addSink(
          DUPLICATES_SINK,
          settings.duplicatesTopic(),
          Serdes.ByteArray().serializer(),
          Serdes.ByteArray().serializer(),
          PROCESSOR);
    }
    return t;
  }
}
