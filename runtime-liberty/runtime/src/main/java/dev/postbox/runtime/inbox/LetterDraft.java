package dev.postbox.runtime.inbox;

import dev.postbox.runtime.api.DeadLetterReason;
import dev.postbox.spi.Envelope;
import java.util.Map;

/**
 * What a dead letter stores, before it is stored: the one argument of {@link
 * DeadLetterRepository#deadLetter(java.sql.Connection, String, LetterDraft, java.time.Instant)}.
 *
 * @param event the decoded event, or null when the message was not a valid event
 * @param headers the raw headers of a message that was not a valid event; empty otherwise
 * @param payload the raw payload of a message that was not a valid event, or null
 * @param metadata the broker's facts about the delivery (partition, offset, message id)
 */
record LetterDraft(
    Envelope event,
    DeadLetterReason reason,
    String why,
    int attempts,
    Map<String, String> headers,
    byte[] payload,
    Map<String, String> metadata) {

  LetterDraft {
    headers = headers == null ? Map.of() : headers;
    metadata = metadata == null ? Map.of() : metadata;
  }

  /** A letter of a decoded event. */
  static LetterDraft of(
      Envelope event,
      DeadLetterReason reason,
      String why,
      int attempts,
      Map<String, String> metadata) {
    return new LetterDraft(event, reason, why, attempts, Map.of(), null, metadata);
  }

  /**
   * The last resort when even a sanitised letter could not be stored: what identifies the message
   * (the broker's metadata, the payload's size and SHA-256), no event fields, headers or payload.
   */
  LetterDraft minimal(String whyWholeFailed) {
    Map<String, String> identity = new java.util.LinkedHashMap<>(metadata);
    byte[] bytes = event != null ? event.payload() : payload == null ? new byte[0] : payload;
    identity.put("postbox.payload.bytes", Integer.toString(bytes.length));
    identity.put("postbox.payload.sha256", dev.postbox.runtime.common.Fingerprint.of(bytes));
    identity.put("postbox.truncated", "true");
    return new LetterDraft(
        null,
        reason,
        why + " (the whole letter could not be stored: " + whyWholeFailed + ")",
        attempts,
        Map.of(),
        new byte[0],
        identity);
  }

  /** The PARKED letter of an event held behind its key's open letter {@code blocker}. */
  static LetterDraft parked(Envelope e, long blocker, int attempts, Map<String, String> metadata) {
    return of(
        e,
        DeadLetterReason.PARKED,
        "parked behind dead letter "
            + blocker
            + " of key '"
            + e.key()
            + "' (sequenced subscription): replayed once the letters before it are settled",
        attempts,
        metadata);
  }
}
