package dev.postbox.benchmarks;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.WindowStoreIterator;

/**
 * The peer for the deduplicator's store: Kafka Streams' canonical dedup (the "distinct events"
 * recipe), a persistent {@link WindowStore} of event id (the {@code ce_id} text) → timestamp with
 * retention of one window. A record is a duplicate when the store holds its id within the window;
 * expiry is Kafka Streams' own, dropping whole time segments.
 */
public final class WindowStoreDedup implements Processor<byte[], byte[], byte[], byte[]> {

  static final String STORE = "window-dedup";
  private final long window;
  private ProcessorContext<byte[], byte[]> context;
  private WindowStore<String, Long> ids;

  private WindowStoreDedup(Duration window) {
    this.window = window.toMillis();
  }

  public static Topology topology(Duration window) {
    return topology(window, "in", "out");
  }

  public static Topology topology(Duration window, String input, String output) {
    Topology t = new Topology();
    t.addSource("in", Serdes.ByteArray().deserializer(), Serdes.ByteArray().deserializer(), input);
    t.addProcessor("dedup", () -> new WindowStoreDedup(window), "in");
    t.addStateStore(
        Stores.windowStoreBuilder(
            Stores.persistentWindowStore(STORE, window, window, false),
            Serdes.String(),
            Serdes.Long()),
        "dedup");
    t.addSink(
        "out", output, Serdes.ByteArray().serializer(), Serdes.ByteArray().serializer(), "dedup");
    return t;
  }

  @Override
  public void init(ProcessorContext<byte[], byte[]> context) {
    this.context = context;
    this.ids = context.getStateStore(STORE);
  }

  @Override
  public void process(Record<byte[], byte[]> record) {
    Header h = record.headers().lastHeader("ce_id");
    String id = new String(h.value(), StandardCharsets.UTF_8);
    long now = record.timestamp();
    try (WindowStoreIterator<Long> it = ids.fetch(id, now - window + 1, now)) {
      if (it.hasNext()) {
        return; // a duplicate
      }
    }
    ids.put(id, now, now);
    context.forward(record);
  }
}
