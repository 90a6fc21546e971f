package dev.postbox.runtime.inbox;

import dev.postbox.runtime.api.DeadLetterReason;
import dev.postbox.runtime.api.InboxListener;
import dev.postbox.runtime.common.Fingerprint;
import dev.postbox.runtime.db.Transactions;
import dev.postbox.runtime.inbox.PendingEventRepository.Pending;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;
import java.lang.System.Logger.Level;
import java.time.Clock;
import java.time.Instant;
import java.util.List;
import java.util.Set;

/**
 * The inbox's one failure path, for the receiver and the queue's workers alike: record the attempt,
 * decide, queue or letter, acknowledge, and tell the listener.
 *
 * <ul>
 *   <li>A delivery whose handler failed with attempts left is <b>queued</b> ({@code
 *       postbox_inbox_pending}) with its attempt count and its next attempt's time, in a
 *       transaction of its own, and then acknowledged. It never goes back to the broker to wait:
 *       its retries run from the database, and its key's later events queue behind it (see {@link
 *       Recording}), so a crash, a rebalance or a broker outage cannot reorder them.
 *   <li>A queued event whose handler failed again counts the attempt and waits with back-off.
 *   <li>After the last attempt, or at once for an {@link
 *       dev.postbox.runtime.api.UnprocessableEventException}, it becomes a dead letter, stored
 *       before its delivery is acknowledged (or, queued, in the transaction that takes it off the
 *       queue); a letter the database refuses whole is stored minimal.
 *   <li>When nothing can be written (the database is down), nothing is acknowledged: an {@link
 *       InboxUnavailableException} tells the consumer loop to pause and try the same deliveries
 *       again; no attempt is burnt.
 * </ul>
 *
 * <p>The handler's failure is logged at WARNING with its stack trace on the first attempt, every
 * hundredth, and the one that dead-letters.
 */
final class FailurePath {

  private static final System.Logger LOG = System.getLogger(FailurePath.class.getName());

  private final Transactions tx;
  private final InboxRepository repo;
  private final DeadLetterRepository letters;
  private final PendingEventRepository pending;
  private final InboxSettings settings;
  private final Clock clock;
  private final InboxListener listener;

  FailurePath(
      Transactions tx,
      InboxRepository repo,
      DeadLetterRepository letters,
      PendingEventRepository pending,
      InboxSettings settings,
      Clock clock,
      InboxListener listener) {
    this.tx = tx;
    this.repo = repo;
    this.letters = letters;
    this.pending = pending;
    this.settings = settings;
    this.clock = clock;
    this.listener = listener;
  }

  /**
   * The receiver: a delivery's handler (or its transaction) failed. Queues it for its next attempt,
   * or dead-letters it, then acknowledges it.
   *
   * @throws InboxUnavailableException nothing could be written; the delivery is left unsettled
   */
  void delivery(Item item, RuntimeException failure) {
    HandlerCall.Failure f = HandlerCall.Failure.of(failure);
    Envelope e = item.envelope;
    Delivery d = item.delivery;
    // The first failure: the broker's delivery count is not an attempt count any more (handler
    // failures never go back to the broker; a restart, a closed session or an expired visibility
    // raises it, and a producer can set a header that some adapters read). Later attempts count in
    // the queued row.
    int attempts = 1;
    DeadLetterReason letter = f.letterAfter(attempts, settings.retry());
    if (letter != null) {
      warn(e, attempts, letter, failure);
      poison(new Poison(d, e, letter, f.error(), java.util.Map.of(), null), attempts);
      return;
    }
    Instant now = clock.instant();
    String fingerprint = Fingerprint.of(e.payload());
    Queued queued;
    try {
      queued =
          tx.inTransaction(
              c -> {
                boolean fresh =
                    repo.recordAll(
                            c,
                            settings.subscription(),
                            List.of(e),
                            List.of(fingerprint),
                            false,
                            now)[0];
                if (!fresh) {
                  // recorded meanwhile (another consumer): a duplicate, or a conflict
                  boolean same =
                      repo.fingerprint(c, settings.subscription(), e.id())
                          .map(fingerprint::equals)
                          .orElse(true);
                  if (same) {
                    repo.countDuplicates(c, settings.subscription(), 1);
                  }
                  return same ? Queued.DUPLICATE : Queued.CONFLICT;
                }
                return pending.enqueueFailed(
                        c,
                        settings.subscription(),
                        e,
                        d.metadata(),
                        attempts,
                        f.error(),
                        now.plus(settings.retry().delayAfter(attempts)))
                    ? Queued.BEHIND
                    : Queued.HEAD;
              });
    } catch (RuntimeException refused) {
      if (!Failures.isDataError(refused)) {
        throw new InboxUnavailableException(settings.subscription(), refused);
      }
      // The database refuses this event's data (not down): it cannot wait in the queue, so it
      // becomes a letter now (minimal if need be), rather than pausing the consumer for ever.
      poison(
          new Poison(
              d,
              e,
              DeadLetterReason.HANDLER_FAILED,
              f.error() + " (could not be queued for a retry: " + Failures.describe(refused) + ")",
              java.util.Map.of(),
              null),
          attempts);
      return;
    }
    switch (queued) {
      case DUPLICATE -> {
        d.ack();
        listener.duplicate(settings.subscription(), e);
      }
      case CONFLICT ->
          poison(
              new Poison(
                  d,
                  e,
                  DeadLetterReason.CONFLICT,
                  "event id " + e.id() + " was recorded meanwhile with another payload",
                  java.util.Map.of(),
                  null),
              attempts);
      default -> {
        // logged once queued: while the database is down nothing is queued, and the consumer
        // loop's one line says so (not a stack trace a second)
        warn(e, attempts, null, failure);
        if (queued == Queued.BEHIND) {
          HeadRecheck.after(tx, pending, settings.subscription(), Set.of(e.key()));
        }
        d.ack();
        listener.retried(settings.subscription(), e, attempts);
      }
    }
  }

  /** What became of a failed delivery in the transaction that queues it. */
  private enum Queued {
    HEAD,
    BEHIND,
    DUPLICATE,
    CONFLICT
  }

  /**
   * Dead-letters a delivery that no retry can fix (or that used its last attempt), then
   * acknowledges it.
   *
   * @throws InboxUnavailableException the letter could not be stored; the delivery is left
   *     unsettled
   */
  void poison(Poison p) {
    poison(p, Math.max(1, p.delivery().attempt()));
  }

  private void poison(Poison p, int attempts) {
    Delivery d = p.delivery();
    LetterDraft draft =
        new LetterDraft(
            p.envelope(),
            p.reason(),
            p.why(),
            attempts,
            p.headers(),
            p.payload() == null ? new byte[0] : p.payload(),
            d.metadata());
    if (!store(draft, (c, letter) -> null)) {
      throw new InboxUnavailableException(
          settings.subscription(), new IllegalStateException("a dead letter could not be stored"));
    }
    d.ack();
    listener.deadLettered(settings.subscription(), p.reason());
  }

  /**
   * A worker: a queued event's handler failed again. Counts the attempt and sets its next time, or
   * dead-letters it (its key's next event becomes the head).
   */
  void queued(Pending p, RuntimeException failure) {
    HandlerCall.Failure f = HandlerCall.Failure.of(failure);
    int attempts;
    if (f.isFinal()) {
      attempts = p.attempts() + 1;
    } else {
      attempts =
          tx.inTransaction(
              c ->
                  pending.failed(
                      c,
                      p,
                      f.error(),
                      clock.instant().plus(settings.retry().delayAfter(p.attempts() + 1))));
      if (attempts == 0) {
        return; // settled meanwhile by someone else
      }
    }
    DeadLetterReason letter = f.letterAfter(attempts, settings.retry());
    warn(p.event(), attempts, letter, failure);
    if (letter == null) {
      listener.retried(settings.subscription(), p.event(), attempts);
      return;
    }
    letterQueued(p, LetterDraft.of(p.event(), letter, f.error(), attempts, p.metadata()));
  }

  /**
   * Dead-letters a queued event in the transaction that takes it off the queue; its key's next
   * event becomes the head.
   */
  void letterQueued(Pending p, LetterDraft draft) {
    boolean[] next = {true};
    String key = p.event().key();
    boolean park = settings.sequenced() && key != null;
    if (!store(
        draft,
        (c, letter) -> {
          next[0] = pending.deadLettered(c, settings.subscription(), p);
          if (park) {
            // Sequenced: the key's queued events are parked behind the new letter in its own
            // transaction, so their letters come right after it, before any the receiver parks.
            for (Pending held : pending.takeKey(c, settings.subscription(), key)) {
              letters.deadLetter(
                  c,
                  settings.subscription(),
                  LetterDraft.parked(held.event(), letter, held.attempts(), held.metadata()),
                  clock.instant());
              listener.parked(settings.subscription(), held.event());
            }
            next[0] = false; // a receiver may have queued behind what was taken: re-check
          }
          return null;
        })) {
      throw new InboxUnavailableException(
          settings.subscription(), new IllegalStateException("a dead letter could not be stored"));
    }
    if (!next[0] && key != null) {
      HeadRecheck.after(tx, pending, settings.subscription(), Set.of(key));
    }
    listener.deadLettered(settings.subscription(), draft.reason());
  }

  /**
   * Stores a letter and runs {@code then} in the same transaction: the whole (sanitised) letter or,
   * if the database refuses its data, the minimal one. False only when neither could be stored (the
   * database is down or busy).
   */
  private boolean store(LetterDraft draft, AfterLetter then) {
    try {
      tx.inTransaction(
          c -> then.run(c, letters.deadLetter(c, settings.subscription(), draft, clock.instant())));
      return true;
    } catch (RuntimeException whole) {
      if (!Failures.isDataError(whole)) {
        return unstored(draft.reason(), whole);
      }
      LetterDraft minimal = draft.minimal(Failures.describe(whole));
      try {
        tx.inTransaction(
            c ->
                then.run(
                    c, letters.deadLetter(c, settings.subscription(), minimal, clock.instant())));
        LOG.log(
            Level.WARNING,
            "inbox "
                + settings.subscription()
                + ": stored a minimal "
                + draft.reason()
                + " dead letter; the whole one failed: "
                + Failures.describe(whole));
        return true;
      } catch (RuntimeException minimalFailed) {
        return unstored(draft.reason(), minimalFailed);
      }
    }
  }

  /** What runs in a letter's transaction after it is stored, with its id. */
  @FunctionalInterface
  private interface AfterLetter {
    Object run(java.sql.Connection c, long letterId) throws java.sql.SQLException;
  }

  private boolean unstored(DeadLetterReason reason, RuntimeException why) {
    LOG.log(
        Level.WARNING,
        "inbox "
            + settings.subscription()
            + ": a "
            + reason
            + " dead letter could not be stored (database unavailable?); the delivery is left"
            + " unacknowledged and tried again: "
            + Failures.describe(why));
    return false;
  }

  /**
   * Once, every hundredth, and the last: a handler that keeps failing holds its key, so it must
   * show in the log, with the stack trace.
   */
  private void warn(Envelope e, int attempts, DeadLetterReason letter, RuntimeException failure) {
    if (attempts != 1 && attempts % 100 != 0 && letter == null) {
      return;
    }
    LOG.log(
        Level.WARNING,
        "inbox "
            + settings.subscription()
            + ": the handler of "
            + e.type()
            + " "
            + e.id()
            + " failed (attempt "
            + attempts
            + (letter == null ? "); queued to retry with back-off" : "); dead-lettered"),
        failure);
  }
}
