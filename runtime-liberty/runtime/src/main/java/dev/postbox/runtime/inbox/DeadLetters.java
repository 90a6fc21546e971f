package dev.postbox.runtime.inbox;

import dev.postbox.runtime.api.DeadLetter;
import dev.postbox.runtime.api.DeadLetterReason;
import dev.postbox.runtime.api.NotReplayableException;
import dev.postbox.runtime.api.ReplayResult;
import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Transactions;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

/** The operator's view of one subscription's dead letters: list, inspect, replay, discard. */
final class DeadLetters implements dev.postbox.runtime.api.DeadLetterOperations {

  private static final int PAGE = 100;

  private final Transactions tx;
  private final InboxRepository repo;
  private final String subscription;
  private final InboxHandler handler;
  private final Clock clock;
  private final Duration dedupWindow;

  /** Letters of a subscription whose inbox rows are never purged (no dedup window to respect). */
  public DeadLetters(
      Transactions tx, Dialect dialect, String subscription, InboxHandler handler, Clock clock) {
    this(tx, dialect, subscription, handler, clock, null);
  }

  /**
   * @param dedupWindow how long the inbox remembers a processed event id ({@code
   *     postbox.inbox.dedup-window}); a letter older than that is replayed only when forced, since
   *     the inbox could no longer tell whether its event was processed meanwhile. Null: forever.
   */
  public DeadLetters(
      Transactions tx,
      Dialect dialect,
      String subscription,
      InboxHandler handler,
      Clock clock,
      Duration dedupWindow) {
    this.tx = tx;
    this.repo = new InboxRepository(dialect);
    this.subscription = subscription;
    this.handler = handler;
    this.clock = clock;
    this.dedupWindow = dedupWindow;
  }

  /** How many dead letters of this subscription are open. */
  public long openCount() {
    return tx.inTransaction(c -> repo.openCount(c, subscription));
  }

  /** Open dead letters, oldest first, without their payloads (see {@link #get}). */
  public List<DeadLetter> open(int limit) {
    return tx.inTransaction(c -> repo.deadLetters(c, subscription, limit));
  }

  public Optional<DeadLetter> get(long id) {
    return tx.inTransaction(c -> repo.deadLetter(c, id, false));
  }

  /**
   * Runs a dead letter's event through the same idempotent path as a delivery: recorded under
   * (subscription, event id) with the handler's writes in one transaction, so a replay can never
   * add a second effect. Marks the letter REPLAYED in that transaction.
   *
   * <p>Two kinds of letter need the operator's explicit decision ({@code force}), and are refused
   * without it:
   *
   * <ul>
   *   <li>a {@link DeadLetterReason#CONFLICT} letter: its payload is <em>not</em> the one processed
   *       under its id; within the dedup window the replay finds the id processed and runs nothing,
   *       after it the handler would run the conflicting payload as a second effect;
   *   <li>any letter older than the dedup window: the inbox has forgotten whether its event was
   *       processed meanwhile (a later copy may have been), so a replay could be a second effect.
   * </ul>
   *
   * @return true if the handler ran, false if the event had been processed meanwhile
   * @throws NotReplayableException the letter is not open, holds no whole event (malformed), or
   *     needs {@code force}
   * @throws RuntimeException the handler failed again; the letter stays open
   */
  public boolean replay(long id) {
    return replay(id, false);
  }

  /** {@link #replay(long)}, with the operator's decision for the letters that need one. */
  public boolean replay(long id, boolean force) {
    return tx.inTransaction(
        c -> {
          DeadLetter dl =
              repo.deadLetter(c, id, true)
                  .orElseThrow(() -> new NotReplayableException("no dead letter " + id));
          if (!"OPEN".equals(dl.status()) || !dl.subscription().equals(subscription)) {
            throw new NotReplayableException(
                "dead letter " + id + " is " + dl.status() + " in " + dl.subscription());
          }
          if (!dl.replayable()) {
            throw new NotReplayableException(
                "dead letter " + id + " (" + dl.reason() + ") holds no whole event to replay");
          }
          if (!force && dl.reason() == DeadLetterReason.CONFLICT) {
            throw new NotReplayableException(
                "dead letter "
                    + id
                    + " is a CONFLICT: its payload differs from the one processed under event id "
                    + dl.eventId()
                    + "; replaying it runs this conflicting payload if the inbox no longer"
                    + " remembers the id. Replay it only deliberately (force)");
          }
          if (!force
              && dedupWindow != null
              && dl.createdAt().isBefore(clock.instant().minus(dedupWindow))) {
            throw new NotReplayableException(
                "dead letter "
                    + id
                    + " is older than the dedup window ("
                    + dedupWindow
                    + "): the inbox no longer knows whether event "
                    + dl.eventId()
                    + " was processed meanwhile. Replay it only deliberately (force)");
          }
          var e = dl.envelope();
          boolean fresh =
              repo.record(
                  c, subscription, e, InboxProcessor.fingerprint(e.payload()), clock.instant());
          if (fresh) {
            try {
              handler.handle(c, e);
            } catch (java.sql.SQLException | RuntimeException rethrow) {
              throw rethrow;
            } catch (Exception checked) {
              throw new InboxProcessor.HandlerException(checked);
            }
          }
          repo.settleDeadLetter(c, id, "REPLAYED", clock.instant());
          return fresh;
        });
  }

  /**
   * Replays every open, replayable dead letter of this subscription, or of one event type, oldest
   * first, each through {@link #replay}. CONFLICT letters are never part of it, and letters that
   * need the operator's decision are counted as failed and stay open. A letter whose handler fails
   * again stays open and is counted; the others go on.
   *
   * @param type an event type, or null for all of the subscription's letters
   */
  public ReplayResult replayAll(String type) {
    int replayed = 0;
    int duplicates = 0;
    int failed = 0;
    long after = 0;
    while (true) {
      long from = after;
      List<Long> ids =
          tx.inTransaction(c -> repo.openIds(c, subscription, type, null, 0, from, PAGE));
      for (long id : ids) {
        try {
          if (replay(id)) {
            replayed++;
          } else {
            duplicates++;
          }
        } catch (RuntimeException again) {
          failed++;
        }
        after = id;
      }
      if (ids.size() < PAGE) {
        return new ReplayResult(replayed, duplicates, failed);
      }
    }
  }

  /**
   * The automatic re-drive policy, run on a schedule: replays HANDLER_FAILED letters that have
   * waited at least {@code delay} since they were dead-lettered or last re-driven, at most {@code
   * maxRedrives} times each. A letter that fails again stays open, and its delay starts over.
   *
   * @return how many letters were replayed successfully
   */
  public int redrive(Duration delay, int maxRedrives, int limit) {
    Instant dueBefore = clock.instant().minus(delay);
    List<Long> ids =
        tx.inTransaction(
            c -> repo.openIds(c, subscription, null, dueBefore, maxRedrives, 0, limit));
    int replayed = 0;
    for (long id : ids) {
      try {
        replay(id);
        replayed++;
      } catch (RuntimeException again) {
        // Failed again, or not replayable without an operator (older than the dedup window,
        // truncated), or settled meanwhile: count it, so it stops being picked after
        // maxRedrives and never holds back the letters behind it.
        tx.inTransaction(
            c -> {
              repo.redriveFailed(c, id, clock.instant());
              return null;
            });
      }
    }
    return replayed;
  }

  /** Gives up on a dead letter; false if it was not open. */
  public boolean discard(long id) {
    return tx.inTransaction(c -> repo.settleDeadLetter(c, id, "DISCARDED", clock.instant()));
  }
}
