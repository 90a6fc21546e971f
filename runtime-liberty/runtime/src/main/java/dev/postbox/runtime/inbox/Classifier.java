package dev.postbox.runtime.inbox;

import dev.postbox.runtime.api.DeadLetterReason;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.MalformedMessageException;
import java.util.List;
import java.util.Map;

/**
 * Decodes and classifies each delivery before any transaction: poison (malformed, no id, oversized,
 * an unknown type) is dead-lettered at once, by the types the adapter and the envelope report,
 * never by an error message's text. What is malformed is decided once, in the spi: an {@link
 * Envelope} keeps {@link dev.postbox.spi.EventRules} (no control characters or unpaired surrogates
 * in any text, a time in the years 1 to 9999), the same rules {@code Outbox.record} applies, so an
 * event the outbox accepted is never MALFORMED here.
 */
final class Classifier {

  private final InboxSettings settings;
  private final boolean keyed;
  private final java.time.Clock clock;

  /**
   * @param keyed whether items carry their dedup front key
   */
  Classifier(InboxSettings settings, boolean keyed) {
    this(settings, keyed, java.time.Clock.systemUTC());
  }

  /**
   * @param keyed whether items carry their dedup front key
   * @param clock the clock expiries are compared with (the database's, in a running Postbox)
   */
  Classifier(InboxSettings settings, boolean keyed, java.time.Clock clock) {
    this.settings = settings;
    this.keyed = keyed;
    this.clock = clock;
  }

  /**
   * A valid event to process; or null, when the delivery is poison (added to {@code poison}, for
   * the caller to dead-letter) or could not be handed over this time (nacked, to come back).
   */
  Item classify(Tracked d, List<Poison> poison) {
    Envelope e;
    try {
      e = d.envelope();
    } catch (MalformedMessageException m) {
      boolean noId = m.kind() == MalformedMessageException.Kind.MISSING_ID;
      poison.add(
          new Poison(
              d,
              null,
              noId ? DeadLetterReason.MISSING_ID : DeadLetterReason.MALFORMED,
              m.reason(),
              m.rawHeaders(),
              m.rawPayload()));
      return null;
    } catch (RuntimeException unreadable) {
      if (unreadable instanceof dev.postbox.spi.BrokerException b
          && b.isRetriable()
          && d.attempt() < settings.retry().maxAttempts()) {
        // The broker could not hand the message over this time (e.g. a large message's stream
        // timed out): the message may be fine. Try again later; past the attempts, a letter.
        d.nack(settings.retry().delayAfter(Math.max(1, d.attempt())));
        return null;
      }
      // An adapter that cannot even say what is wrong: still a stored letter, never unsettled.
      poison.add(
          new Poison(
              d,
              null,
              DeadLetterReason.MALFORMED,
              "the message could not be read: " + Failures.describe(unreadable),
              Map.of(),
              null));
      return null;
    }
    if (e.payloadSize() > settings.maxPayloadBytes()) {
      poison.add(
          new Poison(
              d,
              e,
              DeadLetterReason.OVERSIZED,
              "payload of "
                  + e.payloadSize()
                  + " bytes is over the limit of "
                  + settings.maxPayloadBytes(),
              Map.of(),
              null));
      return null;
    }
    if (!settings.types().isEmpty() && !settings.types().contains(e.type())) {
      poison.add(
          new Poison(
              d,
              e,
              DeadLetterReason.UNKNOWN_TYPE,
              "no handler for type '" + e.type() + "'",
              Map.of(),
              null));
      return null;
    }
    java.util.Optional<java.time.Instant> expiry = e.expiryTime();
    if (expiry.isPresent()) {
      java.time.Instant now = clock.instant();
      if (!expiry.get().isAfter(now)) {
        // Never handled past its expiry: a letter with the times, replayable like any other.
        poison.add(
            new Poison(
                d,
                e,
                DeadLetterReason.EXPIRED,
                "expired at "
                    + expiry.get()
                    + ", received at "
                    + now
                    + " ("
                    + java.time.Duration.between(expiry.get(), now).toMillis()
                    + " ms late)",
                Map.of(),
                null));
        return null;
      }
    }
    return new Item(d, e, keyed);
  }
}
