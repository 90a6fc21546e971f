package dev.postbox.spi;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.regex.Pattern;

/**
 * One event on its way through a broker: CloudEvents 1.0 context attributes, string headers and the
 * payload as bytes.
 *
 * <p>Attribute names follow CloudEvents so that each adapter can map them onto the broker's
 * CloudEvents binding: {@code id}, {@code source}, {@code type}, {@code subject}, {@code time},
 * {@code datacontenttype}, and the partitioning extension {@code partitionkey} for {@link #key()}.
 *
 * <p>Instances are immutable and validated at construction, by the rules every stage of every
 * broker and database carries ({@link EventRules}: no control characters or unpaired surrogates in
 * any text, a time within the years 1 to 9999) and the sizes below. Every violation throws {@link
 * InvalidEventException} naming the attribute and the rule. The payload is copied in and out, so no
 * caller can change an envelope after the fact. A broker's stricter rules are in its {@link
 * Capabilities#check(String, Envelope)}.
 *
 * @param id the event id, unique per source; never blank, at most {@value #MAX_ID_LENGTH} chars
 * @param source the CloudEvents source (a URI reference); never blank
 * @param type the event type, e.g. {@code OrderCaptured}; never blank
 * @param subject the CloudEvents subject; {@code null} when absent, never blank
 * @param key the ordering key: events with equal keys keep their publish order where the broker has
 *     {@link Capabilities#perKeyOrdering()}; {@code null} when the event has no order
 * @param time when the event happened; never {@code null}
 * @param dataContentType the payload's media type; {@code null} when unknown, never blank
 * @param headers extension headers, e.g. W3C {@code traceparent} and {@code tracestate}; never
 *     {@code null}, unmodifiable, in insertion order. Names are lower-case ASCII letters and digits
 *     (the CloudEvents rule, so every broker can carry them unchanged) and must not clash with a
 *     context attribute name.
 * @param payload the event data; never {@code null}, may be empty
 */
public record Envelope(
    String id,
    String source,
    String type,
    String subject,
    String key,
    Instant time,
    String dataContentType,
    Map<String, String> headers,
    byte[] payload) {

  /** Longest allowed event id. Ids are dedup keys in inbox tables, so they stay short. */
  public static final int MAX_ID_LENGTH = 256;

  /** Longest allowed value for source, type, subject, key and content type. */
  public static final int MAX_ATTRIBUTE_LENGTH = 1024;

  /** Most headers an envelope may carry. */
  public static final int MAX_HEADERS = 32;

  /** Most bytes (UTF-8 names plus values) that all headers together may take. */
  public static final int MAX_HEADER_BYTES = 8 * 1024;

  /** Longest header name; CloudEvents recommends 20 and requires nothing, we allow a bit more. */
  public static final int MAX_HEADER_NAME_LENGTH = 40;

  /** W3C trace context header that must travel unchanged through every broker. */
  public static final String TRACEPARENT = "traceparent";

  /** W3C trace state header that travels with {@link #TRACEPARENT}. */
  public static final String TRACESTATE = "tracestate";

  /**
   * The extension attribute that carries an event's expiry, an RFC 3339 time (e.g. {@code
   * 2026-12-04T17:00:00Z}): a relay never publishes the event at or after it, an inbox never hands
   * it to a handler then (it becomes an EXPIRED dead letter), and adapters whose broker can expire
   * a message map it to the broker's own expiry. An envelope whose value does not parse is invalid.
   */
  public static final String EXPIRYTIME = "expirytime";

  private static final Pattern HEADER_NAME = Pattern.compile("[a-z0-9]+");
  private static final Pattern TRACEPARENT_FORMAT =
      Pattern.compile("[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}");

  /**
   * Context attribute names of CloudEvents 1.0 plus the ones our adapters use for their own
   * bookkeeping; a header may not take one of these names, or the wire mapping would be ambiguous.
   */
  public static final java.util.Set<String> RESERVED_NAMES =
      java.util.Set.of(
          "id",
          "source",
          "type",
          "subject",
          "time",
          "datacontenttype",
          "dataschema",
          "specversion",
          "partitionkey",
          "data");

  /** Validates every attribute and takes defensive copies of the headers and the payload. */
  public Envelope {
    requireText("id", id, MAX_ID_LENGTH, false);
    EventRules.checkNoTrailingSpace("id", id);
    requireText("source", source, MAX_ATTRIBUTE_LENGTH, false);
    requireText("type", type, MAX_ATTRIBUTE_LENGTH, false);
    requireText("subject", subject, MAX_ATTRIBUTE_LENGTH, true);
    requireText("key", key, MAX_ATTRIBUTE_LENGTH, true);
    EventRules.checkNoTrailingSpace("key", key);
    requireText("datacontenttype", dataContentType, MAX_ATTRIBUTE_LENGTH, true);
    Objects.requireNonNull(time, "envelope time must not be null");
    EventRules.checkTime(time);
    Objects.requireNonNull(headers, "envelope headers must not be null (use an empty map)");
    Objects.requireNonNull(payload, "envelope payload must not be null (use an empty array)");
    headers = validatedHeaders(headers);
    expiryTime(headers);
    payload = payload.clone();
  }

  /** The event's expiry ({@link #EXPIRYTIME}), if it has one. */
  public java.util.Optional<Instant> expiryTime() {
    return expiryTime(headers);
  }

  /**
   * The expiry that these headers carry ({@link #EXPIRYTIME}), if any.
   *
   * @throws InvalidEventException the value is not an RFC 3339 time
   */
  public static java.util.Optional<Instant> expiryTime(Map<String, String> headers) {
    String value = headers.get(EXPIRYTIME);
    if (value == null) {
      return java.util.Optional.empty();
    }
    try {
      return java.util.Optional.of(java.time.OffsetDateTime.parse(value).toInstant());
    } catch (java.time.format.DateTimeParseException e) {
      throw new InvalidEventException(
          "header " + EXPIRYTIME,
          "must be an RFC 3339 time",
          "header " + EXPIRYTIME + " must be an RFC 3339 time such as 2026-12-04T17:00:00Z");
    }
  }

  /**
   * Milliseconds the event has left to live at {@code now}, at least 1 (an expired event: 1, for
   * the broker to drop it at once), or -1 when it has no expiry; for adapters that map the expiry
   * to a broker's time-to-live, where 0 would mean "never expires".
   */
  public long millisToLive(Instant now) {
    return expiryTime()
        .map(t -> Math.max(1, java.time.Duration.between(now, t).toMillis()))
        .orElse(-1L);
  }

  /** Returns a copy of the payload; the envelope keeps its own. */
  @Override
  public byte[] payload() {
    return payload.clone();
  }

  /** The payload length in bytes, without copying it. */
  public int payloadSize() {
    return payload.length;
  }

  /** The value of one header, or {@code null} when absent. */
  public String header(String name) {
    return headers.get(name);
  }

  /** A builder that starts from this envelope's values. */
  public Builder toBuilder() {
    Builder b = new Builder();
    b.id = id;
    b.source = source;
    b.type = type;
    b.subject = subject;
    b.key = key;
    b.time = time;
    b.dataContentType = dataContentType;
    b.headers.putAll(headers);
    b.payload = payload;
    return b;
  }

  /**
   * A new builder. The id defaults to a random UUID and the time to now; source and type must be
   * set.
   */
  public static Builder builder() {
    return new Builder();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Envelope e
        && id.equals(e.id)
        && source.equals(e.source)
        && type.equals(e.type)
        && Objects.equals(subject, e.subject)
        && Objects.equals(key, e.key)
        && time.equals(e.time)
        && Objects.equals(dataContentType, e.dataContentType)
        && headers.equals(e.headers)
        && Arrays.equals(payload, e.payload);
  }

  @Override
  public int hashCode() {
    return Objects.hash(id, source, type, subject, key, time, dataContentType, headers)
        + 31 * Arrays.hashCode(payload);
  }

  /** Shows the attributes and the payload size, never the payload: it may hold personal data. */
  @Override
  public String toString() {
    return "Envelope[id="
        + id
        + ", type="
        + type
        + ", source="
        + source
        + ", key="
        + key
        + ", time="
        + time
        + ", headers="
        + headers.keySet()
        + ", payloadBytes="
        + payload.length
        + "]";
  }

  private static void requireText(String name, String value, int maxLength, boolean optional) {
    if (value == null) {
      if (optional) {
        return;
      }
      throw new InvalidEventException(name, "must not be null");
    }
    if (value.isBlank()) {
      throw new InvalidEventException(
          name, "must not be blank" + (optional ? " (use null for none)" : ""));
    }
    if (value.length() > maxLength) {
      throw new InvalidEventException(
          name, "is " + value.length() + " chars, the limit is " + maxLength);
    }
    EventRules.checkText(name, value);
  }

  private static Map<String, String> validatedHeaders(Map<String, String> headers) {
    if (headers.size() > MAX_HEADERS) {
      throw new InvalidEventException(
          "headers",
          "are " + headers.size() + ", the limit is " + MAX_HEADERS,
          "envelope has " + headers.size() + " headers, the limit is " + MAX_HEADERS);
    }
    int bytes = 0;
    Map<String, String> copy = new LinkedHashMap<>();
    for (Map.Entry<String, String> h : headers.entrySet()) {
      String name = h.getKey();
      String value = h.getValue();
      if (name == null || !HEADER_NAME.matcher(name).matches()) {
        throw new InvalidEventException(
            "header name '" + printable(name) + "'",
            "is invalid: use lower-case ASCII letters and digits only (CloudEvents)");
      }
      if (name.length() > MAX_HEADER_NAME_LENGTH) {
        throw new InvalidEventException(
            "header name '" + name + "'", "is longer than " + MAX_HEADER_NAME_LENGTH);
      }
      if (RESERVED_NAMES.contains(name)) {
        throw new InvalidEventException(
            "header name '" + name + "'", "is a CloudEvents attribute: set it directly");
      }
      if (value == null) {
        throw new InvalidEventException("header '" + name + "'", "has a null value");
      }
      EventRules.checkText("header " + name, value);
      if (name.equals(TRACEPARENT) && !TRACEPARENT_FORMAT.matcher(value).matches()) {
        throw new InvalidEventException(
            "header traceparent '" + value + "'", "is not W3C trace context format");
      }
      bytes += name.length() + value.getBytes(StandardCharsets.UTF_8).length;
      copy.put(name, value);
    }
    if (bytes > MAX_HEADER_BYTES) {
      throw new InvalidEventException(
          "headers", "take " + bytes + " bytes, the limit is " + MAX_HEADER_BYTES);
    }
    return Collections.unmodifiableMap(copy);
  }

  /** A header name fit for a message: control characters and surrogates shown as code points. */
  private static String printable(String name) {
    if (name == null) {
      return "null";
    }
    StringBuilder out = new StringBuilder();
    name.codePoints()
        .limit(64)
        .forEach(
            c -> {
              if (c < 0x20 || (c >= 0x7F && c <= 0x9F) || (c >= 0xD800 && c <= 0xDFFF)) {
                out.append(EventRules.codePoint(c));
              } else {
                out.appendCodePoint(c);
              }
            });
    return out.toString();
  }

  /** Builds an {@link Envelope}; not thread-safe. Validation happens in {@link #build()}. */
  public static final class Builder {
    private String id = UUID.randomUUID().toString();
    private String source;
    private String type;
    private String subject;
    private String key;
    private Instant time;
    private String dataContentType;
    private final Map<String, String> headers = new LinkedHashMap<>();
    private byte[] payload = new byte[0];

    private Builder() {}

    public Builder id(String id) {
      this.id = id;
      return this;
    }

    public Builder source(String source) {
      this.source = source;
      return this;
    }

    public Builder type(String type) {
      this.type = type;
      return this;
    }

    public Builder subject(String subject) {
      this.subject = subject;
      return this;
    }

    public Builder key(String key) {
      this.key = key;
      return this;
    }

    public Builder time(Instant time) {
      this.time = time;
      return this;
    }

    public Builder dataContentType(String dataContentType) {
      this.dataContentType = dataContentType;
      return this;
    }

    /** Adds or replaces one header. */
    public Builder header(String name, String value) {
      headers.put(name, value);
      return this;
    }

    /** Adds or replaces all the given headers. */
    public Builder headers(Map<String, String> headers) {
      this.headers.putAll(headers);
      return this;
    }

    /** Sets the payload; the array is copied when the envelope is built. */
    public Builder payload(byte[] payload) {
      this.payload = payload;
      return this;
    }

    /** Sets a UTF-8 text payload. */
    public Builder payload(String text) {
      this.payload = text.getBytes(StandardCharsets.UTF_8);
      return this;
    }

    /**
     * Validates and builds.
     *
     * @throws IllegalArgumentException naming the first invalid attribute
     */
    public Envelope build() {
      return new Envelope(
          id,
          source,
          type,
          subject,
          key,
          time == null ? Instant.now() : time,
          dataContentType,
          headers,
          payload);
    }
  }
}
