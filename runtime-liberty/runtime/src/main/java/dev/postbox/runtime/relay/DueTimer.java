package dev.postbox.runtime.relay;

import dev.postbox.runtime.db.Transactions;
import dev.postbox.runtime.outbox.ScheduledRepository;
import java.lang.System.Logger.Level;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.IntConsumer;

/**
 * Wakes the relay when scheduled rows fall due, by the next due time rather than by the poll: a
 * timer armed for the earliest due time this instance knows of (from its own commits and from each
 * poll, which reads the earliest one in the database). When it fires it finds the partitions with
 * due scheduled rows, marks them for promotion (a turn of such a partition turns its due rows
 * PENDING, under its lease) and wakes the ones this instance holds; then it arms for the next due
 * time.
 *
 * <p>So a row recorded here, or known at the last poll, is woken for at its due time; one recorded
 * on another instance with a shorter delay than the poll interval, at the next poll.
 */
final class DueTimer {

  private static final System.Logger LOG = System.getLogger(Relay.class.getName());

  private final Transactions tx;
  private final ScheduledRepository rows;
  private final Clock clock;
  private final ScheduledExecutorService scheduler;
  private final IntConsumer wake;
  private final Set<Integer> promote = ConcurrentHashMap.newKeySet();
  private ScheduledFuture<?> timer; // guarded by this
  private Instant armedFor; // guarded by this
  private volatile boolean stopped;

  DueTimer(
      Transactions tx,
      ScheduledRepository rows,
      Clock clock,
      ScheduledExecutorService scheduler,
      IntConsumer wake) {
    this.tx = tx;
    this.rows = rows;
    this.clock = clock;
    this.scheduler = scheduler;
    this.wake = wake;
  }

  /** A scheduled row falls due at {@code due}: arms the timer if that is earlier than it is. */
  synchronized void expect(Instant due) {
    if (stopped || (armedFor != null && !due.isBefore(armedFor))) {
      return;
    }
    if (timer != null) {
      timer.cancel(false);
    }
    long millis = Math.max(0, Duration.between(clock.instant(), due).toMillis());
    armedFor = due;
    try {
      timer = scheduler.schedule(this::fire, millis, TimeUnit.MILLISECONDS);
    } catch (RuntimeException shutDown) {
      armedFor = null; // stopping: nothing left to wake
    }
  }

  /**
   * Finds the partitions with due scheduled rows, marks and wakes them, and arms for the next due
   * time. Runs when the timer fires and at each poll.
   */
  void fire() {
    if (stopped) {
      return;
    }
    synchronized (this) {
      armedFor = null;
      timer = null;
    }
    try {
      Instant now = clock.instant();
      Found found =
          tx.inTransaction(
              c ->
                  new Found(
                      rows.partitionsWithDueScheduled(c, now), rows.nextScheduledDue(c, now)));
      promote.addAll(found.partitions());
      found.partitions().forEach(wake::accept);
      if (found.next() != null) {
        expect(found.next());
      }
    } catch (RuntimeException | Error e) { // on a timer thread: an escaping throw ends its runs
      LOG.log(
          Level.WARNING, "looking for due scheduled outbox rows failed; the poll retries: " + e);
    }
  }

  private record Found(Set<Integer> partitions, Instant next) {}

  /**
   * Whether a turn of this partition must turn its due scheduled rows PENDING; clears the mark (the
   * next fire or poll marks it again if the turn fails).
   */
  boolean takePromotion(int partition) {
    return promote.remove(partition);
  }

  /** A claim that took these marks rolled back: they stand again. */
  void giveBack(java.util.List<Integer> partitions) {
    if (!stopped) {
      promote.addAll(partitions);
    }
  }

  /** After a claim that promoted: look again in a moment for scheduled rows still due. */
  void lookAgain() {
    expect(clock.instant().plus(LOOK_AGAIN));
  }

  /** How soon {@link #lookAgain} looks. */
  static final Duration LOOK_AGAIN = Duration.ofMillis(250);

  /** These marks, as the claim takes them. */
  PublishTurn.Promotion promotion() {
    return new PublishTurn.Promotion() {
      @Override
      public boolean take(int partition) {
        return takePromotion(partition);
      }

      @Override
      public void giveBack(java.util.List<Integer> partitions) {
        DueTimer.this.giveBack(partitions);
      }

      @Override
      public void lookAgain() {
        DueTimer.this.lookAgain();
      }
    };
  }

  synchronized void stop() {
    stopped = true;
    if (timer != null) {
      timer.cancel(false);
    }
  }
}
