package dev.postbox.runtime.api;

import dev.postbox.spi.Envelope;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
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
 * @param time when the event happened
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

  public OutboxEvent {
    requireText(eventId, "eventId");
    requireText(destination, "destination");
    requireText(type, "type");
    requireText(source, "source");
    Objects.requireNonNull(payload, "payload");
    Objects.requireNonNull(time, "time");
    headers = Map.copyOf(headers == null ? Map.of() : headers);
    payload = payload.clone();
    // Exactly what the relay's envelope will check, now, in the caller's transaction: an event
    // that cannot be published must never be committed, to be parked later with its order.
    try {
      new Envelope(eventId, source, type, subject, key, time, contentType, headers, payload);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "outbox event " + eventId + " cannot be published: " + e.getMessage(), e);
    }
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
      throw new IllegalArgumentException("outbox event " + name + " must not be blank");
    }
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
