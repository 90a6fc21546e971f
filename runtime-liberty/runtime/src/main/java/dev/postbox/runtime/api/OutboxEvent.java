package dev.postbox.runtime.api;

import dev.postbox.spi.Envelope;
import dev.postbox.spi.EventRules;
import dev.postbox.spi.InvalidEventException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;

/**
 * An event an application records in its transaction, to be published after the commit.
 *
 * @param eventId unique id; consumers deduplicate on it
 * @param destination topic or queue
 * @param key ordering key: events with the same key are published in the order recorded; may be
 *     {@code null}
 * @param type event type, e.g. {@code OrderCaptured}
 * @param source CloudEvents source of the application
 * @param subject optional CloudEvents subject
 * @param contentType optional media type of the payload
 * @param headers extension headers (the trace context travels here as {@code traceparent})
 * @param payload the bytes to publish
 * @param time when the event happened; kept to the microsecond
 */
public record OutboxEvent(
    String eventId,
    String destination,
    String key,
    String type,
    String source,
    String subject,
    String contentType,
    Map<String, String> headers,
    byte[] payload,
    Instant time) {

  /**
   * Checks the event by the rules every broker and database carries ({@link EventRules}, through
   * the {@link Envelope} the relay will publish): an event that cannot be published must never be
   * committed, to be parked later with its key's order. The configured broker's own rules are
   * checked when the event is recorded ({@link Outbox#record}).
   *
   * @throws InvalidEventException naming the field and the rule
   */
  public OutboxEvent {
    requireText(eventId, "eventId");
    requireText(type, "type");
    requireText(source, "source");
    Objects.requireNonNull(payload, "payload");
    // Kept to the microsecond, as every supported database stores it: the published event carries
    // the time the caller recorded, not one that PostgreSQL rounded or H2 cut.
    time = Objects.requireNonNull(time, "time").truncatedTo(ChronoUnit.MICROS);
    headers = Map.copyOf(headers == null ? Map.of() : headers);
    payload = payload.clone();
    try {
      EventRules.checkDestination(destination);
      new Envelope(eventId, source, type, subject, key, time, contentType, headers, payload);
    } catch (InvalidEventException e) {
      throw new InvalidEventException(
          e.field(),
          e.rule(),
          "outbox event " + printable(eventId) + " cannot be published: " + e.getMessage());
    }
  }

  /** The payload's length in bytes, without copying it. */
  public int payloadSize() {
    return payload.length;
  }

  /** The envelope the relay publishes for this event. */
  public Envelope envelope() {
    return new Envelope(eventId, source, type, subject, key, time, contentType, headers, payload);
  }

  @Override
  public byte[] payload() {
    return payload.clone();
  }

  public static Builder builder() {
    return new Builder();
  }

  /** A builder that starts from this event's values. */
  public Builder toBuilder() {
    Builder b =
        new Builder()
            .eventId(eventId)
            .destination(destination)
            .key(key)
            .type(type)
            .source(source)
            .subject(subject)
            .contentType(contentType)
            .payload(payload)
            .time(time);
    headers.forEach(b::header);
    return b;
  }

  private static void requireText(String value, String name) {
    if (value == null || value.isBlank()) {
      throw new InvalidEventException(
          name, "must not be blank", "outbox event " + name + " must not be blank");
    }
  }

  /** An id fit for a message: at most 64 characters, control characters and surrogates as '?'. */
  private static String printable(String id) {
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < Math.min(id.length(), 64); i++) {
      char c = id.charAt(i);
      out.append(Character.isISOControl(c) || Character.isSurrogate(c) ? '?' : c);
    }
    return id.length() > 64 ? out + "..." : out.toString();
  }

  /** Builds an {@link OutboxEvent}: id defaults to a random UUID, time to now. */
  public static final class Builder {
    private String eventId = UUID.randomUUID().toString();
    private String destination;
    private String key;
    private String type;
    private String source = "urn:postbox";
    private String subject;
    private String contentType;
    private final Map<String, String> headers = new LinkedHashMap<>();
    private byte[] payload = new byte[0];
    private Instant time;

    public Builder eventId(String v) {
      eventId = v;
      return this;
    }

    public Builder destination(String v) {
      destination = v;
      return this;
    }

    public Builder key(String v) {
      key = v;
      return this;
    }

    public Builder type(String v) {
      type = v;
      return this;
    }

    public Builder source(String v) {
      source = v;
      return this;
    }

    public Builder subject(String v) {
      subject = v;
      return this;
    }

    public Builder contentType(String v) {
      contentType = v;
      return this;
    }

    public Builder header(String name, String value) {
      headers.put(name, value);
      return this;
    }

    public Builder payload(byte[] v) {
      payload = v;
      return this;
    }

    /** A UTF-8 JSON payload; sets the content type to {@code application/json}. */
    public Builder json(String json) {
      payload = json.getBytes(StandardCharsets.UTF_8);
      contentType = "application/json";
      return this;
    }

    public Builder time(Instant v) {
      time = v;
      return this;
    }

    public OutboxEvent build() {
      return new OutboxEvent(
          eventId,
          destination,
          key,
          type,
          source,
          subject,
          contentType,
          headers,
          payload,
          time == null ? Instant.now() : time);
    }
  }
}
