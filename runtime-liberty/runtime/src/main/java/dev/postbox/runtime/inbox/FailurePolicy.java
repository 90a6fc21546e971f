package dev.postbox.runtime.inbox;

import dev.postbox.runtime.api.DeadLetterReason;
import dev.postbox.runtime.api.InboxListener;
import dev.postbox.runtime.db.Transactions;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;
import java.lang.System.Logger.Level;
import java.time.Clock;
import java.util.Map;

/**
 * The inbox's failure policy: a failed handler's attempt is recorded and the delivery nacked with
 * back-off, and after the last attempt (or at once for an {@link
 * dev.postbox.runtime.api.UnprocessableEventException}) dead-lettered; poison is dead-lettered at
 * once. A letter is stored before its delivery is acknowledged; one that cannot be stored leaves
 * its delivery nacked, to come back.
 */
final class FailurePolicy {

  // the inline receiver's logger, as before the failure path had a class of its own
  private static final System.Logger LOG =
      System.getLogger("dev.postbox.runtime.inbox.InboxProcessor");

  private final Transactions tx;
  private final InboxRepository repo;
  private final DeadLetterRepository letters;
  private final InboxSettings settings;
  private final Clock clock;
  private final InboxListener listener;

  FailurePolicy(
      Transactions tx,
      InboxRepository repo,
      DeadLetterRepository letters,
      InboxSettings settings,
      Clock clock,
      InboxListener listener) {
    this.tx = tx;
    this.repo = repo;
    this.letters = letters;
    this.settings = settings;
    this.clock = clock;
    this.listener = listener;
  }

  /** A handler (or its transaction) failed: retry with back-off, or dead-letter. */
  void failed(Item item, RuntimeException failure) {
    HandlerCall.Failure f = HandlerCall.Failure.of(failure);
    String error = f.error();
    String id = item.envelope.id();
    if (f.isFinal()) {
      // No retry can fix it: dead-letter now, with the handler's reason.
      poison(new Poison(item.delivery, item.envelope, f.unprocessable(), error, Map.of(), null));
      return;
    }
    int attempts;
    try {
      attempts =
          tx.inTransaction(
              c -> {
                int n =
                    Math.max(
                        item.delivery.attempt(),
                        repo.failedAttempts(c, settings.subscription(), id) + 1);
                repo.recordFailure(c, settings.subscription(), id, n, error, clock.instant());
                return n;
              });
    } catch (RuntimeException dbDown) {
      // Cannot even record the attempt (database unavailable): let the broker redeliver later.
      item.delivery.nack(settings.retry().delayAfter(Math.max(1, item.delivery.attempt())));
      return;
    }
    DeadLetterReason letter = f.letterAfter(attempts, settings.retry());
    if (attempts == 1 || attempts % 100 == 0 || letter != null) {
      // once, every hundredth, and the last: a handler that keeps failing holds its key (on
      // Kafka, each retry also redelivers the rest of its partition), so it must show in the log
      LOG.log(
          Level.WARNING,
          "inbox "
              + settings.subscription()
              + ": the handler of "
              + item.envelope.type()
              + " "
              + id
              + " failed (attempt "
              + attempts
              + (letter == null ? "); retried with back-off" : "); dead-lettered"),
          failure);
    }
    if (letter == null) {
      item.delivery.nack(settings.retry().delayAfter(attempts));
      listener.retried(settings.subscription(), item.envelope, attempts);
      return;
    }
    if (!storeDeadLetter(item.delivery, item.envelope, letter, error, attempts, Map.of(), null)) {
      item.delivery.nack(settings.retry().delayAfter(attempts));
      return;
    }
    try {
      tx.inTransaction(
          c -> {
            repo.clearAttempts(c, settings.subscription(), id);
            return null;
          });
    } catch (RuntimeException dbDown) {
      // the attempt rows are only counts; the letter is stored, so the delivery is done
    }
    item.delivery.ack();
    listener.deadLettered(settings.subscription(), letter);
  }

  /** Dead-letters a delivery that no retry can fix, then acknowledges it. */
  void poison(Poison p) {
    Delivery d = p.delivery();
    if (!storeDeadLetter(
        d, p.envelope(), p.reason(), p.why(), d.attempt(), p.headers(), p.payload())) {
      d.nack(
          settings.retry().delayAfter(Math.max(1, d.attempt()))); // not stored: must not be acked
      return;
    }
    d.ack();
    listener.deadLettered(settings.subscription(), p.reason());
  }

  /**
   * Stores a dead letter in a transaction of its own: the whole (sanitised) letter, or, if even
   * that fails, the minimal one (subscription, reason, why, the broker's metadata, the payload's
   * size and hash). False only when neither could be stored: the database is down, and the delivery
   * must be nacked, not acked.
   */
  private boolean storeDeadLetter(
      Delivery d,
      Envelope e,
      DeadLetterReason reason,
      String why,
      int attempts,
      Map<String, String> headers,
      byte[] payload) {
    try {
      tx.inTransaction(
          c ->
              letters.deadLetter(
                  c,
                  settings.subscription(),
                  e,
                  reason,
                  why,
                  attempts,
                  headers,
                  payload == null ? new byte[0] : payload,
                  d.metadata(),
                  clock.instant()));
      return true;
    } catch (RuntimeException whole) {
      if (!Failures.isDataError(whole)) {
        // the database is down or busy, not refusing this letter's data: nack, it comes back
        return unstored(reason, whole);
      }
      try {
        Map<String, String> identity = new java.util.LinkedHashMap<>(d.metadata());
        byte[] bytes = e != null ? e.payload() : payload == null ? new byte[0] : payload;
        identity.put("postbox.payload.bytes", Integer.toString(bytes.length));
        identity.put("postbox.payload.sha256", dev.postbox.runtime.common.Fingerprint.of(bytes));
        identity.put("postbox.truncated", "true");
        tx.inTransaction(
            c ->
                letters.deadLetterMinimal(
                    c,
                    settings.subscription(),
                    reason,
                    why
                        + " (the whole letter could not be stored: "
                        + Failures.describe(whole)
                        + ")",
                    attempts,
                    identity,
                    clock.instant()));
        LOG.log(
            Level.WARNING,
            "inbox "
                + settings.subscription()
                + ": stored a minimal "
                + reason
                + " dead letter; the whole one failed: "
                + Failures.describe(whole));
        return true;
      } catch (RuntimeException minimal) {
        return unstored(reason, minimal);
      }
    }
  }

  /** Logs that a letter could not be stored; false, so the caller nacks the delivery. */
  private boolean unstored(DeadLetterReason reason, RuntimeException why) {
    LOG.log(
        Level.WARNING,
        "inbox "
            + settings.subscription()
            + ": a "
            + reason
            + " dead letter could not be stored (database unavailable?); the delivery is"
            + " nacked and will come back: "
            + Failures.describe(why));
    return false;
  }
}
