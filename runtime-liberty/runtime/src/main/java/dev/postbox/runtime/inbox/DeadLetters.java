package dev.postbox.runtime.inbox;

import dev.postbox.runtime.api.DeadLetter;
import dev.postbox.runtime.api.DeadLetterGroup;
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
import java.util.Set;

/** The operator's view of one subscription's dead letters: list, inspect, replay, discard. */
final class DeadLetters implements dev.postbox.runtime.api.DeadLetterOperations {

  private static final System.Logger LOG = System.getLogger(DeadLetters.class.getName());

  private static final int PAGE = 100;

  private final Transactions tx;
  private final DeadLetterRepository letters;
  private final DeadLetterGroupRepository groups;
  private final LetterHoldRepository holds;
  private final String subscription;
  private final Clock clock;
  private final boolean sequenced;
  private final LetterReplay replay;

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
    this(tx, dialect, subscription, handler, clock, dedupWindow, false);
  }

  /**
   * @param sequenced the subscription parks a key's later events behind its open letters ({@link
   *     InboxSettings#withSequenced}): a letter is replayed only when no earlier letter of its key
   *     is open, and settling a letter replays the parked letters behind it, in order
   */
  public DeadLetters(
      Transactions tx,
      Dialect dialect,
      String subscription,
      InboxHandler handler,
      Clock clock,
      Duration dedupWindow,
      boolean sequenced) {
    this.sequenced = sequenced;
    this.tx = tx;
    this.letters = new DeadLetterRepository(dialect);
    this.groups = new DeadLetterGroupRepository(dialect);
    this.holds = new LetterHoldRepository(dialect);
    this.subscription = subscription;
    this.clock = clock;
    this.replay =
        new LetterReplay(
            tx,
            new InboxRepository(dialect),
            letters,
            holds,
            subscription,
            handler,
            clock,
            dedupWindow,
            sequenced);
  }

  /** How many dead letters of this subscription are open. */
  public long openCount() {
    return tx.inTransaction(c -> letters.openCount(c, subscription));
  }

  /** Open dead letters, oldest first, without their payloads (see {@link #get}). */
  public List<DeadLetter> open(int limit) {
    return tx.inTransaction(c -> letters.deadLetters(c, subscription, limit));
  }

  public Optional<DeadLetter> get(long id) {
    return tx.inTransaction(c -> letters.deadLetter(c, id, false));
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

  /**
   * {@link #replay(long)}, with the operator's decision for the letters that need one. In sequenced
   * mode, the parked letters behind it are replayed after it, in order.
   */
  public boolean replay(long id, boolean force) {
    LetterReplay.Replayed r = replay.replayOne(id, force);
    if (sequenced && r.key() != null) {
      release(r.key());
    }
    if (r.conflict() != null) {
      throw new NotReplayableException(r.conflict());
    }
    return r.ran();
  }

  /**
   * Sequenced mode: replays a key's parked letters oldest first while nothing holds them back. One
   * that fails again becomes a HANDLER_FAILED letter and holds the key, as its first failure would
   * have.
   *
   * @return how many were replayed
   */
  private int release(String key) {
    int n = 0;
    try {
      return releaseFrom(key, n);
    } catch (RuntimeException unavailable) {
      // The letter before them is settled; the sweep replays them once the database answers.
      LOG.log(
          System.Logger.Level.WARNING,
          "inbox "
              + subscription
              + ": the parked letters of key '"
              + key
              + "' were not released now; the sweep releases them: "
              + unavailable);
      return n;
    }
  }

  private int releaseFrom(String key, int replayedSoFar) {
    int n = replayedSoFar;
    while (true) {
      Optional<DeadLetter> first =
          tx.inTransaction(c -> holds.firstHolding(c, subscription, key, 0));
      if (first.isEmpty() || first.get().reason() != DeadLetterReason.PARKED) {
        return n;
      }
      long id = first.get().id();
      java.util.Optional<java.time.Instant> expiry = expiryOf(first.get());
      java.time.Instant now = clock.instant();
      if (expiry.isPresent() && !expiry.get().isAfter(now)) {
        // It expired while parked: never handled, an EXPIRED letter with the times (it holds no
        // key), and the next parked event goes on.
        headForOperator(
            id,
            DeadLetterReason.EXPIRED,
            "expired at " + expiry.get() + " while parked; released at " + now);
        continue;
      }
      try {
        if (replay.replayOne(id, false).conflict() == null) {
          n++; // a CONFLICT no longer holds the key: the next one goes on
        }
      } catch (NotReplayableException needsOperator) {
        if (isOpen(id)) {
          // Older than the dedup window, or not whole: it becomes the key's head for the
          // operator (replay with force, or discard), and the sweep no longer tries it.
          headForOperator(
              id, DeadLetterReason.HANDLER_FAILED, "not released: " + needsOperator.getMessage());
          return n;
        }
        // settled meanwhile by another replay: go on with the next
      } catch (VirtualMachineError fatal) {
        throw fatal;
      } catch (RuntimeException | Error failedAgain) {
        if (Failures.isTransient(failedAgain)) {
          return n; // a deadlock or a lock timeout: it stays parked and the sweep tries again
        }
        HandlerCall.Failure f = HandlerCall.Failure.of(failedAgain);
        headForOperator(
            id, f.isFinal() ? f.unprocessable() : DeadLetterReason.HANDLER_FAILED, f.error());
        return n;
      }
    }
  }

  /** The letter's event's expiry ({@code expirytime}), if it has a readable one. */
  private static java.util.Optional<java.time.Instant> expiryOf(DeadLetter letter) {
    try {
      return dev.postbox.spi.Envelope.expiryTime(
          letter.headers() == null ? java.util.Map.of() : letter.headers());
    } catch (dev.postbox.spi.InvalidEventException unreadable) {
      return java.util.Optional.empty();
    }
  }

  private void headForOperator(long id, DeadLetterReason reason, String error) {
    tx.inTransaction(c -> holds.parkedFailed(c, id, reason, error, clock.instant()));
  }

  /**
   * Sequenced mode: releases the keys whose parked letters nothing holds back any more, as after a
   * crash between a replay and its release, or a park that committed just after a release looked.
   * Run on a schedule.
   *
   * @return how many parked letters were replayed
   */
  public int sweepParked() {
    if (!sequenced) {
      return 0;
    }
    int n = 0;
    for (String key :
        new java.util.LinkedHashSet<>(
            tx.inTransaction(c -> holds.releasableKeys(c, subscription, 100)))) {
      n += release(key);
    }
    return n;
  }

  private boolean isOpen(long id) {
    return tx.inTransaction(c -> letters.deadLetter(c, id, false))
        .map(d -> "OPEN".equals(d.status()))
        .orElse(false);
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
    return replayEach(
        after ->
            tx.inTransaction(c -> letters.openIds(c, subscription, type, null, 0, after, PAGE)));
  }

  @Override
  public List<DeadLetterGroup> openGroups() {
    return tx.inTransaction(c -> groups.openGroups(c, subscription));
  }

  @Override
  public ReplayResult replayGroup(DeadLetterReason reason, String errorClass, long throughId) {
    return replayEach(
        after ->
            tx.inTransaction(
                c ->
                    groups.openIdsInGroup(
                        c, subscription, reason, errorClass, throughId, after, PAGE)));
  }

  @Override
  public int discardGroup(DeadLetterReason reason, String errorClass, long throughId) {
    Set<String> keys = new java.util.LinkedHashSet<>();
    int discarded =
        tx.inTransaction(
            c -> {
              if (sequenced) {
                keys.addAll(groups.groupKeys(c, subscription, reason, errorClass, throughId));
              }
              return groups.discardGroup(
                  c, subscription, reason, errorClass, throughId, clock.instant());
            });
    keys.forEach(this::release);
    return discarded;
  }

  /** Replays page after page of ids (each page: the ids after the given one), oldest first. */
  private ReplayResult replayEach(java.util.function.LongFunction<List<Long>> page) {
    int replayed = 0;
    int duplicates = 0;
    int failed = 0;
    long after = 0;
    while (true) {
      List<Long> ids = page.apply(after);
      for (long id : ids) {
        after = id;
        if (sequenced && !isOpen(id)) {
          continue; // replayed meanwhile as a parked letter released by an earlier one
        }
        try {
          LetterReplay.Replayed r = replay.replayOne(id, false);
          if (r.conflict() != null) {
            failed++; // it stays open, as a CONFLICT letter
          } else if (r.ran()) {
            replayed++;
          } else {
            duplicates++;
          }
          if (sequenced && r.key() != null) {
            replayed += release(r.key());
          }
        } catch (VirtualMachineError fatal) {
          throw fatal;
        } catch (RuntimeException | Error again) {
          failed++; // e.g. a StackOverflowError in the handler: this letter, not the whole run
        }
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
            c -> letters.openIds(c, subscription, null, dueBefore, maxRedrives, 0, limit));
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
              letters.redriveFailed(c, id, clock.instant());
              return null;
            });
      }
    }
    return replayed;
  }

  /**
   * Gives up on a dead letter; false if it was not open. In sequenced mode, the parked letters
   * behind it are replayed after it, in order.
   */
  public boolean discard(long id) {
    String[] key = new String[1];
    boolean discarded =
        tx.inTransaction(
            c -> {
              key[0] = letters.deadLetter(c, id, false).map(DeadLetter::key).orElse(null);
              return letters.settleDeadLetter(c, id, "DISCARDED", clock.instant());
            });
    if (discarded && sequenced && key[0] != null) {
      release(key[0]);
    }
    return discarded;
  }
}
