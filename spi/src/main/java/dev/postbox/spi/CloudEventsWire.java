package dev.postbox.spi;

import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * The CloudEvents 1.0 binary content mode over a broker's text headers, written once for every
 * adapter. An adapter says where its binding puts three things, and keeps only the code that moves
 * the map and the payload in and out of its own message type.
 *
 * <ul>
 *   <li>Context attributes are {@code ce_<name>}: {@code ce_specversion}, {@code ce_id}, {@code
 *       ce_source}, {@code ce_type}, {@code ce_subject}, {@code ce_time}.
 *   <li>The content type goes under the name the binding gives ({@code content-type} in the Kafka
 *       binding, {@code ce_datacontenttype} elsewhere).
 *   <li>The ordering key goes under the name the binding gives ({@code JMSXGroupID}, {@code
 *       ce_partitionkey}), or outside the map when the broker has a place of its own for it (a
 *       Kafka record key): then the adapter passes it to {@link #read} itself.
 *   <li>Extension headers are {@code ce_<name>}, except W3C {@code traceparent} and {@code
 *       tracestate}, which keep their own names, where tracing instrumentation looks for them.
 *       Other names without the prefix are the broker's own and are not part of the event.
 * </ul>
 *
 * <p>Reading is strict where the event could not be trusted and lenient where CloudEvents is: a
 * missing {@code ce_specversion}, another spec version, a missing id, source or type, or an invalid
 * value is a {@link MalformedMessageException} (its {@link MalformedMessageException#kind()} says
 * whether the id was missing) carrying the raw bytes; an event without the optional {@code time}
 * gets the time it was read.
 *
 * <p>Not the CloudEvents Java SDK: its bindings cover Kafka and AMQP but not JMS properties or SQS
 * message attributes, this module has no dependencies by design (an adapter's jar goes into every
 * application), and the mapping to {@link Envelope} would still be ours. Structured content mode is
 * not read.
 */
public final class CloudEventsWire {

  /** The only CloudEvents version read and written. */
  public static final String SPEC_VERSION = "1.0";

  /** The prefix of context attributes and extensions. */
  public static final String PREFIX = "ce_";

  private final String noun;
  private final String contentTypeName;
  private final String keyName;

  private CloudEventsWire(String noun, String contentTypeName, String keyName) {
    this.noun = Objects.requireNonNull(noun, "noun");
    this.contentTypeName = Objects.requireNonNull(contentTypeName, "contentTypeName");
    this.keyName = keyName;
  }

  /**
   * A binding.
   *
   * @param noun what the broker calls a header, for error messages: {@code header}, {@code
   *     property}, {@code attribute}
   * @param contentTypeName the name the content type travels under
   * @param keyName the name the ordering key travels under, or {@code null} when the adapter
   *     carries it outside the headers
   */
  public static CloudEventsWire binding(String noun, String contentTypeName, String keyName) {
    return new CloudEventsWire(noun, contentTypeName, keyName);
  }

  /**
   * The envelope's attributes as the broker's headers, in this order: spec version, id, source,
   * type, subject, time, content type, key, then the extensions in the envelope's order. Optional
   * attributes that are {@code null} are left out; values may be empty.
   */
  public Map<String, String> write(Envelope e) {
    Map<String, String> out = new LinkedHashMap<>();
    out.put(PREFIX + "specversion", SPEC_VERSION);
    out.put(PREFIX + "id", e.id());
    out.put(PREFIX + "source", e.source());
    out.put(PREFIX + "type", e.type());
    if (e.subject() != null) {
      out.put(PREFIX + "subject", e.subject());
    }
    out.put(PREFIX + "time", e.time().toString());
    if (e.dataContentType() != null) {
      out.put(contentTypeName, e.dataContentType());
    }
    if (keyName != null && e.key() != null) {
      out.put(keyName, e.key());
    }
    for (Map.Entry<String, String> h : e.headers().entrySet()) {
      out.put(isPlain(h.getKey()) ? h.getKey() : PREFIX + h.getKey(), h.getValue());
    }
    return out;
  }

  /**
   * Reads an envelope back.
   *
   * @param headers the event's headers as text (for SQS, with packed ones already unpacked)
   * @param outsideKey the key when this binding carries it outside the headers; ignored otherwise
   * @param payload the body
   * @param raw the headers exactly as received, kept in the exception for the dead letter
   * @throws MalformedMessageException the headers are not a CloudEvent this binding can read
   */
  public Envelope read(
      Map<String, String> headers, String outsideKey, byte[] payload, Map<String, String> raw) {
    String version = headers.get(PREFIX + "specversion");
    if (version == null) {
      throw new MalformedMessageException(
          "not a CloudEvent: no ce_specversion " + noun, payload, raw, null);
    }
    if (!SPEC_VERSION.equals(version)) {
      throw new MalformedMessageException(
          "unsupported CloudEvents specversion '" + version + "'", payload, raw, null);
    }
    String id = headers.get(PREFIX + "id");
    if (id == null || id.isBlank()) {
      throw new MalformedMessageException(
          MalformedMessageException.Kind.MISSING_ID,
          "invalid CloudEvent: envelope id must not be "
              + (id == null ? "null (no ce_id " + noun + ")" : "blank"),
          payload,
          raw,
          null);
    }
    try {
      String time = headers.get(PREFIX + "time");
      Envelope.Builder b =
          Envelope.builder()
              .id(headers.get(PREFIX + "id"))
              .source(headers.get(PREFIX + "source"))
              .type(headers.get(PREFIX + "type"))
              .subject(headers.get(PREFIX + "subject"))
              .key(keyName == null ? outsideKey : headers.get(keyName))
              .time(time == null ? Instant.now() : Instant.parse(time))
              .dataContentType(headers.get(contentTypeName))
              .payload(payload);
      for (Map.Entry<String, String> h : headers.entrySet()) {
        String name = h.getKey();
        if (isPlain(name)) {
          b.header(name, h.getValue());
        } else if (name.startsWith(PREFIX)
            && !name.equals(contentTypeName)
            && !name.equals(keyName)
            && !Envelope.RESERVED_NAMES.contains(name.substring(PREFIX.length()))) {
          b.header(name.substring(PREFIX.length()), h.getValue());
        }
      }
      return b.build();
    } catch (IllegalArgumentException | NullPointerException | DateTimeParseException e) {
      throw new MalformedMessageException("invalid CloudEvent: " + e.getMessage(), payload, raw, e);
    }
  }

  private static boolean isPlain(String name) {
    return name.equals(Envelope.TRACEPARENT) || name.equals(Envelope.TRACESTATE);
  }
}
