package dev.postbox.broker.kafka;

import dev.postbox.spi.Envelope;
import dev.postbox.spi.MalformedMessageException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.format.DateTimeParseException;
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

  static final String PREFIX = "ce_";
  static final String SPEC_VERSION = "1.0";
  static final String CONTENT_TYPE = "content-type";
  private static final java.util.Set<String> PLAIN_HEADERS =
      java.util.Set.of(Envelope.TRACEPARENT, Envelope.TRACESTATE);

  private CloudEventsKafkaHeaders() {}

  static Headers toHeaders(Envelope e) {
    RecordHeaders h = new RecordHeaders();
    put(h, PREFIX + "specversion", SPEC_VERSION);
    put(h, PREFIX + "id", e.id());
    put(h, PREFIX + "source", e.source());
    put(h, PREFIX + "type", e.type());
    if (e.subject() != null) {
      put(h, PREFIX + "subject", e.subject());
    }
    put(h, PREFIX + "time", e.time().toString());
    if (e.dataContentType() != null) {
      put(h, CONTENT_TYPE, e.dataContentType());
    }
    for (Map.Entry<String, String> x : e.headers().entrySet()) {
      String name = PLAIN_HEADERS.contains(x.getKey()) ? x.getKey() : PREFIX + x.getKey();
      put(h, name, x.getValue());
    }
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
    Map<String, String> raw = new LinkedHashMap<>();
    for (Header header : headers) {
      raw.put(
          header.key(),
          header.value() == null ? "" : new String(header.value(), StandardCharsets.UTF_8));
    }
    String specVersion = raw.get(PREFIX + "specversion");
    if (specVersion == null) {
      throw new MalformedMessageException(
          "not a CloudEvent: no ce_specversion header", payload, raw, null);
    }
    if (!SPEC_VERSION.equals(specVersion)) {
      throw new MalformedMessageException(
          "unsupported CloudEvents specversion '" + specVersion + "'", payload, raw, null);
    }
    try {
      Envelope.Builder b =
          Envelope.builder()
              .id(raw.get(PREFIX + "id"))
              .source(raw.get(PREFIX + "source"))
              .type(raw.get(PREFIX + "type"))
              .subject(raw.get(PREFIX + "subject"))
              .key(key == null ? null : new String(key, StandardCharsets.UTF_8))
              .dataContentType(raw.get(CONTENT_TYPE))
              .payload(payload);
      String time = raw.get(PREFIX + "time");
      if (time == null) {
        throw new MalformedMessageException("missing ce_time header", payload, raw, null);
      }
      b.time(Instant.parse(time));
      for (Map.Entry<String, String> x : raw.entrySet()) {
        String name = x.getKey();
        if (PLAIN_HEADERS.contains(name)) {
          b.header(name, x.getValue());
        } else if (name.startsWith(PREFIX)
            && !isContextAttribute(name.substring(PREFIX.length()))) {
          b.header(name.substring(PREFIX.length()), x.getValue());
        }
      }
      return b.build();
    } catch (IllegalArgumentException | NullPointerException | DateTimeParseException e) {
      throw new MalformedMessageException("invalid CloudEvent: " + e.getMessage(), payload, raw, e);
    }
  }

  private static boolean isContextAttribute(String name) {
    return Envelope.RESERVED_NAMES.contains(name);
  }

  private static void put(RecordHeaders h, String name, String value) {
    h.add(name, value.getBytes(StandardCharsets.UTF_8));
  }
}
