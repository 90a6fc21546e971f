package dev.postbox.runtime.api;

import dev.postbox.spi.Envelope;
import java.time.Instant;
import java.util.Map;

/**
 * A pending outbox row as the relay claimed it.
 *
 * @param dueAt the due time of a scheduled row that does not hold its key ({@code Schedule} without
 *     {@code inKeyOrder}); null for every other row
 */
public record OutboxRow(
    long id,
    int partition,
    String eventId,
    String destination,
    String key,
    String type,
    String source,
    String subject,
    String contentType,
    Map<String, String> headers,
    byte[] payload,
    Instant eventTime,
    Instant createdAt,
    int attempts,
    Instant dueAt) {

  /** A row that was not scheduled (or holds its key): no due time of its own. */
  public OutboxRow(
      long id,
      int partition,
      String eventId,
      String destination,
      String key,
      String type,
      String source,
      String subject,
      String contentType,
      Map<String, String> headers,
      byte[] payload,
      Instant eventTime,
      Instant createdAt,
      int attempts) {
    this(
        id,
        partition,
        eventId,
        destination,
        key,
        type,
        source,
        subject,
        contentType,
        headers,
        payload,
        eventTime,
        createdAt,
        attempts,
        null);
  }

  /**
   * The envelope to publish.
   *
   * @throws IllegalArgumentException if the row does not make a valid envelope (a poison row)
   */
  public Envelope toEnvelope() {
    return new Envelope(
        eventId, source, type, subject, key, eventTime, contentType, headers, payload);
  }
}
