package dev.postbox.runtime.relay;

import dev.postbox.runtime.api.BrokerOutage;
import dev.postbox.runtime.api.RelayListener;
import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Transactions;
import dev.postbox.runtime.outbox.OutboxRepository;
import dev.postbox.spi.Publisher;
import java.lang.System.Logger.Level;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Publishes committed outbox rows: one instance of it per application instance.
 *
 * <p>It holds leases on some of the P partitions ({@link LeaseManager}) and publishes each held
 * partition in id order, in <em>turns</em>: a turn takes the partitions woken since the last one
 * (up to a share of the held ones per worker, at most {@code workerThreads} turns at once) and is a
 * {@link PublishTurn}: a claim transaction, the broker calls outside any transaction, and a
 * settling transaction.
 *
 * <p>Wake-ups that arrive during a turn join the next one, and after a busy turn the worker waits
 * {@link #LINGER_NANOS} first, so under load a turn carries many commits for the cost of one; an
 * idle commit still goes at once. A further worker starts only when a whole share of partitions
 * waits, the last turn was full, or a turn runs long (a slow broker).
 *
 * <p>Only the lease owner claims a partition's rows, and within an instance one turn of a partition
 * runs at a time, so rows are published in order. A crash, or a lease lost during the broker call
 * (a pause longer than the lease), leaves rows pending: they are published again, never lost, and
 * the inbox drops the copy. A destination whose whole publish fails with retriable errors is out
 * ({@link Outages}): one turn at a time probes it while the rest wait without calling the broker,
 * and when it answers again its waiting rows go at once. Work arrives by {@link #wake(int)} right
 * after an application commit, and by polling as a safety net.
 *
 * <p>This class schedules partitions over workers, with wake-ups, heartbeats, polls and an orderly
 * close; a turn itself is a {@link PublishTurn}, the leases are the {@link LeaseManager}'s, and the
 * retention of settled rows is the {@link OutboxEngine}'s.
 */
final class Relay implements AutoCloseable {

  private static final System.Logger LOG = System.getLogger(Relay.class.getName());

  private final Transactions tx;
  private final OutboxRepository rows;
  private final Publisher publisher;
  private final RelaySettings settings;
  private final Clock clock;
  private final ScheduledExecutorService scheduler;
  private final ExecutorService workers;
  private final RelayListener listener;
  private final LeaseManager leases;
  private final Outages outages;
  private final PublishTurn turn;
  private final DueTimer dueTimer;

  /**
   * A bounded wait before the next turn, after a busy one only: the wake-ups of commits that arrive
   * meanwhile join that turn instead of each starting a small one, while an idle commit still goes
   * at once.
   */
  static final long LINGER_NANOS = TimeUnit.MILLISECONDS.toNanos(2);

  private final Object turns = new Object();
  private final TurnQueue queue = new TurnQueue(); // guarded by turns
  private int running; // workers started and not yet done; guarded by turns
  private boolean recheck; // a dispatch is scheduled for when a running turn turns slow; turns
  private boolean lastFull; // the last turn hit its batch size; guarded by turns

  /** A turn running longer than this lets a further worker start, whatever waits. */
  static final long SLOW_TURN_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

  private final List<ScheduledFuture<?>> schedules = new ArrayList<>();
  private final Object idle = new Object();
  private int draining; // guarded by idle
  private volatile Set<Integer> owned = Set.of();
  private volatile boolean stopped;

  public Relay(
      Transactions tx,
      Dialect dialect,
      Publisher publisher,
      RelaySettings settings,
      Clock clock,
      ScheduledExecutorService scheduler,
      ExecutorService workers,
      RelayListener listener) {
    this.tx = tx;
    this.rows = new OutboxRepository(dialect, settings.partitions());
    this.publisher = publisher;
    this.settings = settings;
    this.clock = clock;
    this.scheduler = scheduler;
    this.workers = workers;
    this.listener = listener;
    this.leases = new LeaseManager(tx, dialect, settings);
    this.outages = new Outages(settings.retry(), settings.outageProbeInterval());
    this.dueTimer =
        new DueTimer(
            tx,
            new dev.postbox.runtime.outbox.ScheduledRepository(dialect),
            clock,
            scheduler,
            this::wake);
    this.turn =
        new PublishTurn(
            tx,
            rows,
            leases,
            settings,
            clock,
            listener,
            new BatchSender(publisher, outages, clock),
            new Settlement(rows, settings, clock, listener),
            dueTimer.promotion());
  }

  /** Creates lease rows, takes a first share of partitions, and starts heartbeats and polling. */
  public void start() {
    leases.ensurePartitions();
    heartbeat();
    long beat = Math.max(100, settings.leaseDuration().toMillis() / 3);
    schedules.add(
        scheduler.scheduleWithFixedDelay(this::heartbeat, beat, beat, TimeUnit.MILLISECONDS));
    long poll = settings.pollInterval().toMillis();
    schedules.add(scheduler.scheduleWithFixedDelay(this::poll, 0, poll, TimeUnit.MILLISECONDS));
  }

  /**
   * Wakes the partition's publisher, if this instance holds it. Cheap; call after commit. The
   * partition joins the next turn: at once when no turn runs, else when one ends.
   */
  public void wake(int partition) {
    if (stopped || !owned.contains(partition)) {
      return; // the owner's poll picks it up
    }
    synchronized (turns) {
      queue.wake(partition);
    }
    dispatch();
  }

  /**
   * A scheduled row was committed here, due at {@code due}: the relay wakes for it then (if this
   * instance holds its partition at that time).
   */
  public void expectDue(java.time.Instant due) {
    if (!stopped) {
      dueTimer.expect(due);
    }
  }

  /**
   * Starts workers: one when none runs and a partition waits, more (up to {@code workerThreads})
   * only while a whole share of partitions waits or the last turn was full. So under light load
   * wake-ups coalesce into the next turn of the one worker instead of each starting a small one,
   * and under heavy load the workers publish in parallel.
   */
  private void dispatch() {
    while (true) {
      synchronized (turns) {
        if (stopped || running >= settings.workerThreads()) {
          return;
        }
        int takeable = queue.takeable();
        if (takeable == 0) {
          return;
        }
        if (running > 0
            && takeable < share()
            && !lastFull
            && !queue.aTurnIsSlow(System.nanoTime(), SLOW_TURN_NANOS)) {
          recheckWhenSlow(); // if the running turn stalls, these must not wait for the poll
          return;
        }
        running++;
      }
      try {
        workers.execute(this::work);
      } catch (RuntimeException | Error e) { // e.g. no native thread: give the slot back
        synchronized (turns) {
          running--;
        }
        LOG.log(Level.WARNING, "the relay's executor refused work; the next wake-up retries: " + e);
        return;
      }
    }
  }

  /** Partitions a turn may take: up to a share of the held ones, for {@code workerThreads}. */
  private int share() {
    int workersCount = settings.workerThreads();
    return Math.max(1, (owned.size() + workersCount - 1) / workersCount);
  }

  private void recheckWhenSlow() { // guarded by turns
    if (recheck || stopped) {
      return;
    }
    recheck = true;
    try {
      scheduler.schedule(
          () -> {
            synchronized (turns) {
              recheck = false;
            }
            dispatch();
          },
          SLOW_TURN_NANOS + 1_000_000,
          TimeUnit.NANOSECONDS);
    } catch (RuntimeException e) {
      recheck = false; // shut down: the poll, if any, or the next wake-up looks again
    }
  }

  /** A worker: takes turns until no partition waits, lingering briefly after a busy turn. */
  private void work() {
    synchronized (idle) {
      draining++;
    }
    try {
      boolean busy = false;
      while (!stopped) {
        if (busy) {
          java.util.concurrent.locks.LockSupport.parkNanos(LINGER_NANOS);
        }
        List<Integer> partitions = take();
        if (partitions.isEmpty()) {
          break;
        }
        busy = turn(partitions);
      }
    } finally {
      synchronized (turns) {
        running--;
      }
      synchronized (idle) {
        draining--;
        idle.notifyAll();
      }
      if (!stopped) {
        dispatch(); // woken after our last look, while we still counted as running
      }
    }
  }

  /** Takes up to a share of the waiting partitions that no other turn is publishing. */
  private List<Integer> take() {
    synchronized (turns) {
      // After a full turn (a backlog) one partition fills a turn, as a whole batch of one
      // partition did; the share is for many partitions with a few rows each.
      return queue.take(lastFull ? 1 : share(), System.nanoTime());
    }
  }

  /**
   * One turn over some partitions; returns whether it was busy (more than one row, or more left).
   * Partitions that have more rows than the turn took wait for a later turn, after the others.
   */
  private boolean turn(List<Integer> partitions) {
    Set<Integer> first = new java.util.LinkedHashSet<>();
    Set<Integer> more = new java.util.LinkedHashSet<>();
    int claimed = 0;
    try {
      claimed = publishTurn(partitions, first, more);
    } catch (RuntimeException e) {
      LOG.log(Level.WARNING, "publishing partitions " + partitions + " failed; retried: " + e);
    } finally {
      synchronized (turns) {
        queue.done(partitions, first, more, stopped);
        lastFull = claimed >= settings.batchSize();
      }
    }
    return claimed > 1 || !more.isEmpty() || !first.isEmpty();
  }

  /** The destinations that are out now; empty while the broker takes everything. */
  public List<BrokerOutage> brokerOutages() {
    List<BrokerOutage> out = new ArrayList<>();
    outages
        .snapshot(clock.instant())
        .forEach((d, o) -> out.add(new BrokerOutage(d, o.since(), o.failures(), o.error())));
    out.sort(java.util.Comparator.comparing(BrokerOutage::destination));
    return out;
  }

  /** The partitions this instance holds now. */
  public Set<Integer> ownedPartitions() {
    return owned;
  }

  /** Events this instance has published since it started. */
  public long publishedCount() {
    return turn.published();
  }

  /** The operator's view of the outbox: failed rows, retry, discard, lag. */
  OutboxAdmin admin() {
    return new OutboxAdmin(tx, rows, clock);
  }

  private void heartbeat() {
    if (stopped) {
      return;
    }
    try {
      Set<Integer> stuck;
      synchronized (turns) {
        stuck = queue.stuck(System.nanoTime(), settings);
      }
      Set<Integer> before = owned;
      owned = Set.copyOf(leases.heartbeat(queue::isInFlight, stuck));
      for (int p : owned) {
        if (!before.contains(p)) {
          wake(p); // a partition taken over may hold a crashed instance's rows
        }
      }
    } catch (RuntimeException | Error e) { // an escaping throw would end the heartbeats for good
      LOG.log(Level.WARNING, "lease heartbeat failed; leases expire if this persists: " + e, e);
    }
  }

  private void poll() {
    if (stopped || owned.isEmpty()) {
      return;
    }
    try {
      Set<Integer> due = tx.inTransaction(c -> rows.partitionsWithWork(c, clock.instant()));
      for (int p : due) {
        wake(p);
      }
    } catch (RuntimeException | Error e) { // an escaping throw would end the polls for good
      LOG.log(Level.WARNING, "outbox poll failed; retrying at the next interval: " + e);
    }
    dueTimer.fire(); // scheduled rows due now, and the next due time, whoever recorded them
  }

  /** One turn over some partitions (see {@link PublishTurn}); returns how many rows it claimed. */
  int publishTurn(List<Integer> partitions, Set<Integer> first, Set<Integer> more) {
    return turn.run(
        partitions, first, more, lost -> owned = without(lost), () -> owned.forEach(this::wake));
  }

  private Set<Integer> without(Set<Integer> partitions) {
    Set<Integer> s = new HashSet<>(owned);
    s.removeAll(partitions);
    return Set.copyOf(s);
  }

  /** Stops publishing, waits for batches in flight, and hands the partitions back. */
  @Override
  public void close() {
    if (stopped) {
      return;
    }
    stopped = true;
    schedules.forEach(f -> f.cancel(false));
    dueTimer.stop();
    awaitIdle();
    try {
      leases.releaseAll();
    } catch (RuntimeException e) {
      LOG.log(Level.WARNING, "releasing leases failed; they expire on their own: " + e);
    }
  }

  /**
   * For tests: stops at once without releasing anything, as a crash would. Leases stay with this
   * instance until they expire.
   */
  public void halt() {
    stopped = true;
    schedules.forEach(f -> f.cancel(true));
    dueTimer.stop();
    awaitIdle();
  }

  /** Waits, at most 30 s, for the batches in flight; new drains see {@code stopped} and exit. */
  private void awaitIdle() {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    synchronized (idle) {
      long left;
      while (draining > 0 && (left = deadline - System.nanoTime()) > 0) {
        try {
          idle.wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }
}
