package dev.postbox.broker.kafka;

import dev.postbox.spi.Capabilities;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.testing.WireRoundTripProperties;
import java.nio.ByteBuffer;
import java.util.Map;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.SimpleRecord;

/**
 * The kit's wire round trip through Kafka's own record format: the envelope becomes a record (key,
 * value, CloudEvents headers), is written into a record batch as the producer sends it and read
 * back as the consumer does.
 */
class KafkaWireRoundTripTest extends WireRoundTripProperties {

  private static final Capabilities CAPABILITIES =
      KafkaBroker.capabilities(KafkaSettings.from(Map.of("bootstrap.servers", "localhost:9092")));

  @Override
  protected Capabilities capabilities() {
    return CAPABILITIES;
  }

  @Override
  protected String destination() {
    return "orders.v1";
  }

  @Override
  protected Envelope roundTrip(String destination, Envelope e) {
    MemoryRecords batch =
        MemoryRecords.withRecords(
            Compression.NONE,
            new SimpleRecord(
                0L,
                CloudEventsKafkaHeaders.keyBytes(e),
                e.payload(),
                CloudEventsKafkaHeaders.toHeaders(e).toArray()));
    MemoryRecords read = MemoryRecords.readableRecords(ByteBuffer.wrap(bytes(batch.buffer())));
    Record r = read.records().iterator().next();
    return CloudEventsKafkaHeaders.fromRecord(
        bytes(r.key()), bytes(r.value()), new RecordHeaders(r.headers()));
  }

  private static byte[] bytes(ByteBuffer b) {
    if (b == null) {
      return null;
    }
    byte[] out = new byte[b.remaining()];
    b.duplicate().get(out);
    return out;
  }
}
