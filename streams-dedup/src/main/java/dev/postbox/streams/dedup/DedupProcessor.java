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
 * <p>One changelogged store, {@code seen}: an id's 16-byte key ({@link IdKeys}) → when it was first
 * seen (8 bytes). There is no expiry index: the purge punctuator sweeps the store in key order from
 * where its last run stopped, a bounded slice per run, deleting what is past the window. Where it
 * stopped is kept in the store itself (under {@link #CURSOR}, a key no id has), so it commits with
 * the rest and a restarted or moved task goes on from there. The slice is sized so the sweep passes
 * over the whole store about twice per window; disk stays bounded by about 1.5 × window × rate, and
 * every id costs one entry instead of two. An entry older than the window counts as absent whether
 * or not the sweep has deleted it yet, so for records in time order the sweep never changes an
 * outcome. (A record later than the window behind stream time may find its original swept or not,
 * depending on how far the sweep has come.)
 */
final class DedupProcessor implements Processor<byte[], byte[], byte[], byte[]> {

  static final String REASON_HEADER = "postbox_dedup_reason";

  /** The fewest entries one purge run looks at, so small stores are swept whole at once. */
  static final int MIN_SWEEP = 10_000;

  /**
   * The sweep's bookmark: the key where the next run starts, its first 8 bytes under this key and
   * its last 8 under {@link #CURSOR_LOW}. Keys of one and two bytes, which no id's 16-byte key can
   * be, and which sort before every id. Absent: the next run starts at the beginning.
   */
  static final Bytes CURSOR = Bytes.wrap(new byte[] {0});

  static final Bytes CURSOR_LOW = Bytes.wrap(new byte[] {0, 0});

  private final DedupSettings settings;
  private final IdKeys keys = new IdKeys();
  private ProcessorContext<byte[], byte[]> context;
  private KeyValueStore<Bytes, Long> seen;
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
    this.seen = context.getStateStore(DedupTopology.SEEN_STORE);
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
    Bytes key = keys.of(id);
    Long firstSeen = seen.get(key);
    if (firstSeen != null && now - firstSeen < settings.window().toMillis()) {
      duplicates.record();
      if (settings.duplicatesTopic() != null) {
        context.forward(record, DedupTopology.DUPLICATES_SINK);
      }
      return;
    }
    seen.put(key, now); // new, or seen before the window: a new first sighting
    context.forward(record, DedupTopology.OUTPUT_SINK);
  }

  /** Event time ({@code stream-time}) or processing time ({@code wall-clock}). */
  private long now(Record<byte[], byte[]> record) {
    return settings.time() == DedupSettings.TimeSemantics.STREAM_TIME
        ? record.timestamp()
        : context.currentSystemTimeMs();
  }

  /**
   * Sweeps the next slice of the store (from where the last run stopped, wrapping at the end) and
   * deletes the ids first seen at or before {@code timestamp - window}.
   */
  void purge(long timestamp) {
    long cutoff = timestamp - settings.window().toMillis();
    if (cutoff < 0) {
      return;
    }
    long entries = seen.approximateNumEntries();
    long slice =
        Math.max(
            MIN_SWEEP,
            2 * entries * settings.purgeInterval().toMillis() / settings.window().toMillis() + 1);
    Long high = seen.get(CURSOR);
    Long low = seen.get(CURSOR_LOW);
    Bytes from =
        high == null || low == null
            ? null
            : Bytes.wrap(ByteBuffer.allocate(IdKeys.LENGTH).putLong(high).putLong(low).array());
    List<Bytes> expired = new ArrayList<>();
    Bytes next = null;
    long looked = 0;
    try (KeyValueIterator<Bytes, Long> it = from == null ? seen.all() : seen.range(from, null)) {
      while (it.hasNext()) {
        KeyValue<Bytes, Long> e = it.next();
        if (e.key.get().length != IdKeys.LENGTH) {
          continue; // the bookmark
        }
        if (looked == slice) {
          next = e.key; // where the next run starts
          break;
        }
        looked++;
        if (e.value <= cutoff) {
          expired.add(e.key);
        }
      }
    }
    if (next != null) {
      ByteBuffer b = ByteBuffer.wrap(next.get());
      seen.put(CURSOR, b.getLong());
      seen.put(CURSOR_LOW, b.getLong());
    } else if (from != null) {
      seen.delete(CURSOR); // a pass is over: the next starts at the beginning
      seen.delete(CURSOR_LOW);
    }
    for (Bytes key : expired) {
      seen.delete(key);
      purged.record();
    }
    storeSize.record(seen.approximateNumEntries());
  }
}
