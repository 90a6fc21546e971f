package dev.postbox.runtime.api;

import dev.postbox.spi.Envelope;
import java.time.Instant;
import java.util.Map;

/**
 * A delivery the inbox could not process, with everything needed to inspect or replay it. For a
 * malformed message, the event attributes are null and headers and payload are as received. {@code
 * redrives} counts automatic replays that failed again.
 */
public record DeadLetter(
    long id,
    String subscription,
    String eventId,
    String key,
    String type,
    String source,
    String subject,
    String contentType,
    Instant eventTime,
    DeadLetterReason reason,
    String error,
    int attempts,
    Map<String, String> headers,
    byte[] payload,
    Map<String, String> metadata,
    String status,
    Instant createdAt,
    int redrives) {

  /**
   * The metadata key set when the delivery was too large to store whole: such a letter is kept for
   * inspection and cannot be replayed.
   */
  public static final String TRUNCATED = "postbox.truncated";

  /** Whether the letter holds a whole event that can be replayed. */
  public boolean replayable() {
    return eventId != null
        && type != null
        && source != null
        && eventTime != null
        && !metadata.containsKey(TRUNCATED);
  }

  /** The event as it was delivered. */
  public Envelope envelope() {
    return new Envelope(
        eventId, source, type, subject, key, eventTime, contentType, headers, payload);
  }
}
