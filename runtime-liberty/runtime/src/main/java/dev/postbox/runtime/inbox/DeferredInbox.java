package dev.postbox.runtime.inbox;

import dev.postbox.runtime.api.DeadLetterReason;
import dev.postbox.runtime.api.InboxListener;
import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Transactions;
import dev.postbox.runtime.inbox.PendingEventRepository.Pending;
import java.lang.System.Logger.Level;
import java.sql.Connection;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The inbox queue's workers: run the handler for events that an {@link InboxProcessor} recorded as
 * RECEIVED and queued. In deferred mode that is every event; in inline mode it is an event whose
 * handler failed (waiting for its next attempt) and the later events of its key, queued behind it.
 * One engine for both modes: retries run here, from the database, never from the broker.
 *
 * <p>A worker claims ready events with {@code FOR UPDATE SKIP LOCKED}, only ever the oldest pending
 * event of each key, and runs their handlers in one transaction that also marks them PROCESSED and
 * removes them from the queue. If a handler fails, that transaction rolls back and the claimed
 * events are run one per transaction, so a failing event cannot hold back events of other keys. A
 * failure goes through the {@link FailurePath}: it counts an attempt (in its own transaction) and
 * delays the event with back-off; its key waits behind it. After the last attempt it is
 * dead-lettered and its key moves on (in sequenced mode, the key's queued events are parked behind
 * the letter at their next claim). (A little over 300 lines: the workers' loop with its wake-ups
 * and shutdown, beside the attempt itself.)
 */
final class DeferredInbox implements AutoCloseable {

  private static final System.Logger LOG = System.getLogger(DeferredInbox.class.getName());

  /** Events claimed per worker transaction. */
  static final int CLAIM_BATCH = 100;

  /** How often an idle worker looks for events coming out of back-off without a wake-up. */
  private static final Duration IDLE_POLL = Duration.ofMillis(250);

  /** How often a worker that keeps failing says so. */
  private static final Duration FAILURE_LOG_EVERY = Duration.ofSeconds(30);

  /** How often a worker sweeps for lost heads. */
  private static final Duration SWEEP_EVERY = Duration.ofMinutes(1);

  private final AtomicLong nextSweep = new AtomicLong(System.nanoTime());

  private final Transactions tx;
  private final DeadLetterRepository letters;
  private final LetterHoldRepository holds;
  private final FailurePath failures;
  private final PendingEventRepository pending;
  private final InboxSettings settings;
  private final InboxHandler handler;
  private final Clock clock;
  private final InboxListener listener;
  private final BatchFallbacks fallbacks;
  private final Object signal = new Object();
  private volatile boolean stopped;
  private long wakeups;
  private CountDownLatch workersDone = new CountDownLatch(0);

  public DeferredInbox(
      Transactions tx,
      Dialect dialect,
      InboxSettings settings,
      InboxHandler handler,
      Clock clock,
      InboxListener listener) {
    this.tx = tx;
    this.letters = new DeadLetterRepository(dialect);
    this.holds = new LetterHoldRepository(dialect);
    this.pending = new PendingEventRepository(dialect);
    this.failures =
        new FailurePath(
            tx, new InboxRepository(dialect), letters, pending, settings, clock, listener);
    this.settings = settings;
    this.handler = handler;
    this.clock = clock;
    this.listener = listener;
    this.fallbacks = new BatchFallbacks(settings.subscription(), System::nanoTime);
  }

  /**
   * Starts {@link InboxSettings#workers()} worker loops on the executor (in inline mode as many as
   * the receiver's lanes, so that a queue filled by an outage of the handlers' downstream drains as
   * fast as it filled).
   */
  public synchronized void start(Executor executor) {
    int n = settings.workers();
    workersDone = new CountDownLatch(n);
    for (int i = 0; i < n; i++) {
      executor.execute(this::workLoop);
    }
  }

  /** Tells idle workers that new events were queued (call after the receiving commit). */
  public void wake() {
    synchronized (signal) {
      wakeups++;
      signal.notifyAll();
    }
  }

  /** Events still waiting for a worker. */
  public long depth() {
    return tx.inTransaction(c -> pending.depth(c, settings.subscription()));
  }

  /**
   * Claims ready events and runs them once.
   *
   * @return how many events were claimed (processed, rescheduled or dead-lettered)
   */
  public int runOnce() {
    sweepIfDue();
    List<Pending> done;
    Set<String> recheck = new HashSet<>();
    List<List<Pending>> claimedHere = new java.util.ArrayList<>(1);
    try {
      done =
          tx.inTransaction(
              c -> {
                List<Pending> claimed = claim(c, CLAIM_BATCH, recheck);
                claimedHere.add(claimed);
                for (Pending p : claimed) {
                  HandlerCall.run(handler, c, p.event());
                }
                recheck.addAll(
                    pending.processedAll(c, settings.subscription(), claimed, clock.instant()));
                return claimed;
              });
    } catch (RuntimeException | Error thrown) {
      // a handler's Error is an attempt like any other (HandlerCall.asAttempt)
      RuntimeException failed =
          thrown instanceof Error e ? HandlerCall.asAttempt(e) : (RuntimeException) thrown;
      List<Pending> claimed = claimedHere.isEmpty() ? List.of() : claimedHere.get(0);
      if (claimed.size() == 1) {
        // One event: its failure is its attempt. Running it again alone would call its handler
        // twice for one counted attempt (twice the calls to anything outside the transaction).
        failures.queued(claimed.get(0), failed);
        return 1;
      }
      LOG.log(Level.DEBUG, "queued batch failed; running one by one: " + failed);
      return runOneByOne(failed);
    }
    if (!done.isEmpty()) {
      fallbacks.batchSucceeded();
    }
    recheckHeads(recheck);
    done.forEach(p -> listener.processed(settings.subscription(), p.event()));
    return done.size();
  }

  /** After a failed batch: one event per transaction, so the failing one is isolated. */
  private int runOneByOne(RuntimeException batchFailure) {
    int claimed = 0;
    boolean eachSucceeded = true;
    for (int i = 0; i < CLAIM_BATCH; i++) {
      Pending[] current = new Pending[1];
      Set<String> recheck = new HashSet<>();
      try {
        boolean any =
            tx.inTransaction(
                c -> {
                  List<Pending> one = claim(c, 1, recheck);
                  if (one.isEmpty()) {
                    return false;
                  }
                  current[0] = one.get(0);
                  handle(c, current[0], recheck);
                  return true;
                });
        if (!any) {
          break;
        }
        recheckHeads(recheck);
        listener.processed(settings.subscription(), current[0].event());
      } catch (RuntimeException | Error thrown) {
        RuntimeException failure =
            thrown instanceof Error e ? HandlerCall.asAttempt(e) : (RuntimeException) thrown;
        if (current[0] == null) {
          throw failure; // the claim itself failed: the database, not a handler
        }
        eachSucceeded = false;
        failures.queued(current[0], failure);
      }
      claimed++;
    }
    if (eachSucceeded && claimed > 1) {
      fallbacks.failedWholeButEachSucceededAlone(batchFailure);
    }
    return claimed;
  }

  /**
   * Claims up to {@code limit} heads. A stale row (queued by an earlier version, before the event
   * rules: never runnable now) becomes a MALFORMED letter with its fields, in this transaction, and
   * its key's next event goes on.
   */
  private List<Pending> claim(Connection c, int limit, Set<String> recheck)
      throws java.sql.SQLException {
    Instant now = clock.instant();
    PendingEventRepository.Claimed claimed = pending.claim(c, settings.subscription(), now, limit);
    for (PendingEventRepository.Stale u : claimed.stale()) {
      letters.deadLetter(
          c,
          settings.subscription(),
          new LetterDraft(
              null,
              DeadLetterReason.MALFORMED,
              "queued before this version's event rules and not runnable now: "
                  + u.why().getMessage(),
              1,
              u.raw(),
              u.payload(),
              u.metadata()),
          now);
      pending.dropStale(c, settings.subscription(), u);
    }
    // Past its expiry by now (it was not when it arrived): an EXPIRED letter with the times, in
    // this transaction, and its key's next event goes on; never handled.
    List<Pending> ready = new java.util.ArrayList<>();
    for (Pending p : parkHeld(c, claimed.ready(), now, recheck)) {
      java.util.Optional<Instant> expiry = p.event().expiryTime();
      if (expiry.isEmpty() || expiry.get().isAfter(now)) {
        ready.add(p);
        continue;
      }
      letters.deadLetter(
          c,
          settings.subscription(),
          LetterDraft.of(
              p.event(),
              DeadLetterReason.EXPIRED,
              "expired at "
                  + expiry.get()
                  + ", reached by the queue's worker at "
                  + now
                  + " ("
                  + java.time.Duration.between(expiry.get(), now).toMillis()
                  + " ms late)",
              p.attempts(),
              p.metadata()),
          now);
      if (!pending.deadLettered(c, settings.subscription(), p) && p.event().key() != null) {
        recheck.add(p.event().key());
      }
      listener.deadLettered(settings.subscription(), DeadLetterReason.EXPIRED);
    }
    return ready;
  }

  /**
   * Sequenced mode: a claimed head whose key has an open dead letter (its event before it was
   * dead-lettered, or a receiver queued it behind a head that then was) is never run; the key's
   * queued events are parked behind the letter, oldest first, in this transaction. The same look-up
   * as the receiver's ({@link HeldKeys}). Other modes: the claim as it is.
   */
  private List<Pending> parkHeld(
      Connection c, List<Pending> claimed, Instant now, Set<String> recheck)
      throws java.sql.SQLException {
    if (!settings.sequenced() || claimed.isEmpty()) {
      return claimed;
    }
    Set<String> keys = new HashSet<>();
    claimed.forEach(p -> keys.add(p.event().key()));
    keys.remove(null);
    Map<String, Long> letterHeld =
        HeldKeys.lookup(c, settings.subscription(), true, holds, keys).byLetter();
    if (letterHeld.isEmpty()) {
      return claimed;
    }
    List<Pending> ready = new java.util.ArrayList<>();
    for (Pending p : claimed) {
      Long blocker = p.event().key() == null ? null : letterHeld.get(p.event().key());
      if (blocker == null) {
        ready.add(p);
        continue;
      }
      recheck.add(p.event().key()); // a receiver may queue behind what this takes
      for (Pending held : pending.takeKey(c, settings.subscription(), p.event().key())) {
        letters.deadLetter(
            c,
            settings.subscription(),
            LetterDraft.parked(held.event(), blocker, held.attempts(), held.metadata()),
            now);
        listener.parked(settings.subscription(), held.event());
      }
    }
    return ready;
  }

  private void handle(Connection c, Pending p, Set<String> recheck) throws java.sql.SQLException {
    HandlerCall.run(handler, c, p.event());
    recheck.addAll(pending.processedAll(c, settings.subscription(), List.of(p), clock.instant()));
  }

  /**
   * After the commit: keys whose queue this worker saw empty, in case a receiver queued their next
   * event meanwhile (see {@link PendingEventRepository}).
   */
  private void recheckHeads(Set<String> keys) {
    HeadRecheck.after(tx, pending, settings.subscription(), keys);
  }

  /** Repairs heads lost to a crash between a commit and its re-check; at start, then rarely. */
  private void sweepIfDue() {
    long now = System.nanoTime();
    long due = nextSweep.get();
    if (now - due < 0 || !nextSweep.compareAndSet(due, now + SWEEP_EVERY.toNanos())) {
      return;
    }
    int restored = tx.inTransaction(c -> pending.sweep(c, settings.subscription()));
    if (restored > 0) {
      LOG.log(
          Level.INFO,
          "deferred inbox " + settings.subscription() + ": restored " + restored + " lost heads");
    }
  }

  private void workLoop() {
    long failingSince = 0;
    long lastFailureLog = 0;
    try {
      while (!stopped) {
        long seen;
        synchronized (signal) {
          seen = wakeups;
        }
        int claimed;
        try {
          claimed = runOnce();
        } catch (RuntimeException | Error e) {
          // the worker must outlive any failure, an OutOfMemoryError included: the subscription's
          // retries and the keys behind them wait for it, and nothing else would restart it.
          // Logged when failing starts, then every 30 s while it lasts (it retries every 250 ms).
          long now = System.nanoTime();
          if (failingSince == 0 || now - lastFailureLog > FAILURE_LOG_EVERY.toNanos()) {
            LOG.log(
                Level.WARNING,
                "inbox queue worker of " + settings.subscription() + " failed; retrying: " + e);
            lastFailureLog = now;
          }
          failingSince = failingSince == 0 ? now : failingSince;
          idle(seen);
          continue;
        }
        failingSince = 0;
        if (claimed == 0) {
          idle(seen);
        }
      }
    } finally {
      workersDone.countDown();
    }
  }

  /** Waits for a wake-up newer than {@code seen}, or the idle poll interval. */
  private void idle(long seen) {
    long deadline = System.nanoTime() + IDLE_POLL.toNanos();
    synchronized (signal) {
      while (!stopped && wakeups == seen) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          return;
        }
        try {
          TimeUnit.NANOSECONDS.timedWait(signal, left);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          stopped = true;
        }
      }
    }
  }

  /** Stops the workers after their current transaction and waits for them. */
  @Override
  public void close() {
    stopped = true;
    wake();
    try {
      workersDone.await(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
