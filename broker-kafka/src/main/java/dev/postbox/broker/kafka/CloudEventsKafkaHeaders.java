package dev.postbox.broker.kafka;

import dev.postbox.spi.CloudEventsWire;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.MalformedMessageException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * Maps envelopes to and from the CloudEvents Kafka protocol binding, binary content mode.
 *
 * <ul>
 *   <li>Context attributes become {@code ce_<name>} headers ({@code ce_specversion}, {@code ce_id},
 *       {@code ce_source}, {@code ce_type}, {@code ce_subject}, {@code ce_time}), the content type
 *       becomes the {@code content-type} header, and the payload is the record value.
 *   <li>The ordering key ({@code partitionkey}) becomes the record key, so Kafka's partitioner
 *       keeps per-key order.
 *   <li>Extension headers become {@code ce_<name>}, except W3C {@code traceparent} and {@code
 *       tracestate}, which travel under their own names, where tracing instrumentation looks for
 *       them.
 * </ul>
 */
final class CloudEventsKafkaHeaders {

  static final String CONTENT_TYPE = "content-type";

  /** The key is the record key, outside the headers. */
  private static final CloudEventsWire WIRE = CloudEventsWire.binding("header", CONTENT_TYPE, null);

  private CloudEventsKafkaHeaders() {}

  static Headers toHeaders(Envelope e) {
    RecordHeaders h = new RecordHeaders();
    WIRE.write(e).forEach((name, value) -> h.add(name, value.getBytes(StandardCharsets.UTF_8)));
    return h;
  }

  static byte[] keyBytes(Envelope e) {
    return e.key() == null ? null : e.key().getBytes(StandardCharsets.UTF_8);
  }

  /**
   * Reads an envelope back.
   *
   * @throws MalformedMessageException when required attributes are missing or invalid
   */
  static Envelope fromRecord(byte[] key, byte[] value, Headers headers) {
    Map<String, String> raw = new LinkedHashMap<>();
    for (Header header : headers) {
      raw.put(
          header.key(),
          header.value() == null ? "" : new String(header.value(), StandardCharsets.UTF_8));
    }
    return WIRE.read(
        raw,
        key == null ? null : new String(key, StandardCharsets.UTF_8),
        value == null ? new byte[0] : value,
        raw);
  }
}
