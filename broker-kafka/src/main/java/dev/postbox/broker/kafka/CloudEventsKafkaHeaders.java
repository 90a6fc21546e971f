package dev.postbox.broker.kafka;

import dev.postbox.spi.CloudEventsWire;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.EventRules;
import dev.postbox.spi.InvalidEventException;
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
    byte[] payload = value == null ? new byte[0] : value;
    Map<String, String> raw = new LinkedHashMap<>(); // as received, for a dead letter
    Map<String, String> text = new LinkedHashMap<>(); // strictly decoded
    InvalidEventException notUtf8 = null;
    for (Header header : headers) {
      byte[] bytes = header.value() == null ? new byte[0] : header.value();
      raw.put(header.key(), new String(bytes, StandardCharsets.UTF_8));
      try {
        text.put(header.key(), EventRules.utf8("header " + header.key(), bytes));
      } catch (InvalidEventException e) {
        notUtf8 = notUtf8 == null ? e : notUtf8;
      }
    }
    String keyText = null;
    if (key != null) {
      try {
        keyText = EventRules.utf8("key", key);
      } catch (InvalidEventException e) {
        notUtf8 = notUtf8 == null ? e : notUtf8;
      }
    }
    if (notUtf8 != null) {
      // Replacing the bad bytes would change the event: it is not the event that was sent.
      throw new MalformedMessageException(
          "invalid CloudEvent: " + notUtf8.getMessage(), payload, raw, notUtf8);
    }
    return WIRE.read(text, keyText, payload, raw);
  }
}
