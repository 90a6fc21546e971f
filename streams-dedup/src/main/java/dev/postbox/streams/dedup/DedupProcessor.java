package dev.postbox.streams.dedup;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * Forwards a record the first time its event id is seen within the window; drops later ones, or
 * forwards them to the duplicates child. Records without an id go to the errors child with a
 * {@value #REASON_HEADER} header.
 *
 * <p>Two stores, both changelogged: {@code ids} maps an id to when it was first seen, and {@code
 * expiry} indexes the same entries by time (an 8-byte big-endian timestamp followed by the id), so
 * the purge punctuator range-scans only what has expired instead of the whole store. Memory and
 * disk stay bounded by window × rate, not by history.
 */
final class DedupProcessor implements Processor<byte[], byte[], byte[], byte[]> {

  static final String REASON_HEADER = "postbox_dedup_reason";

  private final DedupSettings settings;
  private ProcessorContext<byte[], byte[]> context;
  private KeyValueStore<String, Long> ids;
  private KeyValueStore<Bytes, byte[]> expiry;
  private Sensor in;
  private Sensor duplicates;
  private Sensor errors;
  private Sensor purged;
  private Sensor storeSize;

  DedupProcessor(DedupSettings settings) {
    this.settings = settings;
  }

  @Override
  public void init(ProcessorContext<byte[], byte[]> context) {
    this.context = context;
    this.ids = context.getStateStore(DedupTopology.IDS_STORE);
    this.expiry = context.getStateStore(DedupTopology.EXPIRY_STORE);
    String task = context.taskId().toString();
    var metrics = context.metrics();
    in =
        metrics.addRateTotalSensor("postbox-dedup", task, "records-in", Sensor.RecordingLevel.INFO);
    duplicates =
        metrics.addRateTotalSensor(
            "postbox-dedup", task, "duplicates-dropped", Sensor.RecordingLevel.INFO);
    errors =
        metrics.addRateTotalSensor(
            "postbox-dedup", task, "records-without-id", Sensor.RecordingLevel.INFO);
    purged =
        metrics.addRateTotalSensor("postbox-dedup", task, "ids-purged", Sensor.RecordingLevel.INFO);
    storeSize =
        metrics.addSensor("postbox-dedup-" + task + "-ids-in-store", Sensor.RecordingLevel.INFO);
    storeSize.add(
        new org.apache.kafka.common.MetricName(
            "ids-in-store",
            "stream-postbox-dedup-metrics",
            "ids held in the dedup store (RocksDB's estimate), updated at each purge",
            java.util.Map.of("task-id", task)),
        new org.apache.kafka.common.metrics.stats.Value());
    PunctuationType type =
        settings.time() == DedupSettings.TimeSemantics.STREAM_TIME
            ? PunctuationType.STREAM_TIME
            : PunctuationType.WALL_CLOCK_TIME;
    context.schedule(settings.purgeInterval(), type, this::purge);
  }

  @Override
  public void process(Record<byte[], byte[]> record) {
    in.record();
    String id = settings.idExtractor().extract(record);
    if (id == null) {
      errors.record();
      Record<byte[], byte[]> error = record.withHeaders(record.headers());
      error
          .headers()
          .add(
              REASON_HEADER,
              ("no event id (" + settings.idSource() + ")").getBytes(StandardCharsets.UTF_8));
      context.forward(error, DedupTopology.ERRORS_SINK);
      return;
    }
    long now = now(record);
    Long firstSeen = ids.get(id);
    if (firstSeen != null && now - firstSeen < settings.window().toMillis()) {
      duplicates.record();
      if (settings.duplicatesTopic() != null) {
        context.forward(record, DedupTopology.DUPLICATES_SINK);
      }
      return;
    }
    if (firstSeen != null) {
      expiry.delete(expiryKey(firstSeen, id)); // seen before the window: a new first sighting
    }
    ids.put(id, now);
    expiry.put(expiryKey(now, id), new byte[0]);
    context.forward(record, DedupTopology.OUTPUT_SINK);
  }

  /** Event time ({@code stream-time}) or processing time ({@code wall-clock}). */
  private long now(Record<byte[], byte[]> record) {
    return settings.time() == DedupSettings.TimeSemantics.STREAM_TIME
        ? record.timestamp()
        : context.currentSystemTimeMs();
  }

  /** Deletes every id first seen at or before {@code timestamp - window}. */
  void purge(long timestamp) {
    long cutoff = timestamp - settings.window().toMillis();
    if (cutoff < 0) {
      return;
    }
    List<KeyValue<Bytes, byte[]>> expired = new ArrayList<>();
    try (KeyValueIterator<Bytes, byte[]> it =
        expiry.range(expiryKey(0, ""), expiryKey(cutoff + 1, ""))) {
      while (it.hasNext()) {
        expired.add(it.next());
      }
    }
    for (KeyValue<Bytes, byte[]> e : expired) {
      byte[] key = e.key.get();
      long seen = ByteBuffer.wrap(key, 0, Long.BYTES).getLong();
      String id = new String(key, Long.BYTES, key.length - Long.BYTES, StandardCharsets.UTF_8);
      Long current = ids.get(id);
      if (current != null && current == seen) {
        ids.delete(id);
      }
      expiry.delete(e.key);
      purged.record();
    }
    storeSize.record(ids.approximateNumEntries());
  }

  static Bytes expiryKey(long timestamp, String id) {
    byte[] idBytes = id.getBytes(StandardCharsets.UTF_8);
    return Bytes.wrap(
        ByteBuffer.allocate(Long.BYTES + idBytes.length).putLong(timestamp).put(idBytes).array());
  }
}
