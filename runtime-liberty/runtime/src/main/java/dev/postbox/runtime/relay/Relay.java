package dev.postbox.runtime.relay;

import dev.postbox.runtime.api.BrokerOutage;
import dev.postbox.runtime.api.OutboxRow;
import dev.postbox.runtime.api.RelayListener;
import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Transactions;
import dev.postbox.runtime.outbox.OutboxRepository;
import dev.postbox.runtime.retention.Retention;
import dev.postbox.spi.Publisher;
import java.lang.System.Logger.Level;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Publishes committed outbox rows: one instance of it per application instance.
 *
 * <p>It holds leases on some of the P partitions ({@link LeaseManager}) and publishes each held
 * partition in id order, in <em>turns</em>: a turn takes the partitions woken since the last one
 * (up to a share of the held ones per worker, at most {@code workerThreads} turns at once) and is
 *
 * <ol>
 *   <li>a short transaction that locks the turn's lease rows in one statement, checks this instance
 *       still holds each with time to spare, reads the keys held up by a FAILED row or a back-off,
 *       and claims each partition's due rows in id order up to one batch for the whole turn (never
 *       {@code SKIP LOCKED}, which could skip an earlier row of a key);
 *   <li>the broker calls, one per destination (per wave, when a key alternates between
 *       destinations), <em>outside any transaction</em>: a slow or absent broker holds a worker
 *       thread, never a pooled connection or a lock that the application's own transactions wait
 *       for;
 *   <li>a second short transaction that checks the leases again, marks what was accepted dispatched
 *       in one statement, reschedules retriable failures with back-off, and parks permanent ones as
 *       FAILED.
 * </ol>
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
 * <p>(Near 400 lines: the scheduling of partitions over workers, with wake-ups, heartbeats, polls,
 * fencing and an orderly close, is one piece; the broker calls are in {@link BatchSender}, the
 * second transaction in {@link Settlement}, the leases in {@link LeaseManager}.)
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
  private final Retention retention;
  private final Outages outages;
  private final BatchSender sender;
  private final Settlement settlement;

  /**
   * A bounded wait before the next turn, after a busy one only: the wake-ups of commits that arrive
   * meanwhile join that turn instead of each starting a small one, while an idle commit still goes
   * at once.
   */
  static final long LINGER_NANOS = TimeUnit.MILLISECONDS.toNanos(2);

  private final Object turns = new Object();
  // Woken partitions, in the order they were woken; guarded by turns. A partition whose turn is
  // running can be here too: it was woken again, and goes in a later turn.
  private final java.util.LinkedHashSet<Integer> waiting = new java.util.LinkedHashSet<>();
  // Partitions a turn is publishing now (written under turns; the heartbeat reads it unlocked).
  private final Set<Integer> inFlight = ConcurrentHashMap.newKeySet();
  private int running; // workers started and not yet done; guarded by turns
  private boolean recheck; // a dispatch is scheduled for when a running turn turns slow; turns
  private boolean lastFull; // the last turn hit its batch size; guarded by turns
  // When each running turn began; guarded by turns. A turn that takes long (a slow broker call)
  // lets another worker start, so the other partitions do not wait for it.
  private final Map<List<Integer>, Long> turnStarts = new java.util.IdentityHashMap<>();

  /** A turn running longer than this lets a further worker start, whatever waits. */
  static final long SLOW_TURN_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

  private final List<ScheduledFuture<?>> schedules = new ArrayList<>();
  private final AtomicLong published = new AtomicLong();
  private final AtomicLong fenced = new AtomicLong();
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
    this.retention = Retention.outbox(tx, dialect, clock);
    this.outages = new Outages(settings.retry(), settings.outageProbeInterval());
    this.sender = new BatchSender(publisher, outages, clock);
    this.settlement = new Settlement(rows, settings, clock, listener);
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
    schedules.add(scheduler.scheduleWithFixedDelay(this::purge, 1, 1, TimeUnit.MINUTES));
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
      waiting.add(partition);
    }
    dispatch();
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
        int takeable = takeable();
        if (takeable == 0) {
          return;
        }
        if (running > 0 && takeable < share() && !lastFull && !aTurnIsSlow()) {
          recheckWhenSlow(); // if the running turn stalls, these must not wait for the poll
          return;
        }
        running++;
      }
      try {
        workers.execute(this::work);
      } catch (RuntimeException e) {
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

  private boolean aTurnIsSlow() { // guarded by turns
    long now = System.nanoTime();
    for (long started : turnStarts.values()) {
      if (now - started > SLOW_TURN_NANOS) {
        return true;
      }
    }
    return false;
  }

  private int takeable() { // guarded by turns
    int n = 0;
    for (int p : waiting) {
      if (!inFlight.contains(p)) {
        n++;
      }
    }
    return n;
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
      List<Integer> out = new ArrayList<>();
      // After a full turn (a backlog) one partition fills a turn, as a whole batch of one
      // partition did; the share is for many partitions with a few rows each.
      int share = lastFull ? 1 : share();
      java.util.Iterator<Integer> it = waiting.iterator();
      while (it.hasNext() && out.size() < share) {
        int p = it.next();
        if (!inFlight.contains(p)) {
          it.remove();
          inFlight.add(p);
          out.add(p);
        }
      }
      if (!out.isEmpty()) {
        turnStarts.put(out, System.nanoTime());
      }
      return out;
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
        turnStarts.remove(partitions);
        partitions.forEach(inFlight::remove);
        if (!stopped && !first.isEmpty()) {
          // not reached in this turn: ahead of every other waiting partition in the next
          Set<Integer> behind = new java.util.LinkedHashSet<>(waiting);
          waiting.clear();
          waiting.addAll(first);
          waiting.addAll(behind);
        }
        if (!stopped) {
          waiting.addAll(more);
        }
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
    return published.get();
  }

  /** The operator's view of the outbox: failed rows, retry, discard, lag. */
  OutboxAdmin admin() {
    return new OutboxAdmin(tx, rows, clock);
  }

  /** Deletes dispatched rows older than the retention, in bounded batches; returns how many. */
  public int purge() {
    try {
      return retention.purge(settings.retention(), settings.retentionBatch());
    } catch (RuntimeException e) {
      LOG.log(Level.WARNING, "outbox retention failed; it runs again later: " + e);
      return 0;
    }
  }

  private void heartbeat() {
    if (stopped) {
      return;
    }
    try {
      Set<Integer> before = owned;
      owned = Set.copyOf(leases.heartbeat(inFlight::contains));
      for (int p : owned) {
        if (!before.contains(p)) {
          wake(p); // a partition taken over may hold a crashed instance's rows
        }
      }
    } catch (RuntimeException e) {
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
    } catch (RuntimeException e) {
      LOG.log(Level.WARNING, "outbox poll failed; retrying at the next interval: " + e);
    }
  }

  /** What a turn's claim transaction found. */
  private record Claim(
      List<OutboxRow> rows, Set<Integer> lost, Set<Integer> unreached, Set<Integer> full) {}

  /**
   * One turn over some partitions: claim in one short transaction that locks their lease rows (a
   * takeover skips them until it commits), publish outside any transaction, settle in a second
   * short transaction, fenced per partition by its lease. Returns how many rows it claimed; adds to
   * {@code first} the partitions the turn did not reach (they go first next time) and to {@code
   * more} those that may have rows left.
   *
   * <p>(#20 tried a claim that locked nothing; the SQS FIFO crash harness then left orders waiting
   * after a restart. The claim locks the lease rows.)
   */
  int publishTurn(List<Integer> partitions, Set<Integer> first, Set<Integer> more) {
    Claim claim =
        tx.inTransaction(
            c -> {
              Instant now = clock.instant();
              Map<Integer, Boolean> held = leases.holdsWithTimeToSpare(c, partitions);
              Set<Integer> lost = new HashSet<>();
              List<Integer> due = new ArrayList<>();
              for (int p : partitions) {
                Boolean spare = held.get(p);
                if (spare == null) {
                  lost.add(p);
                } else if (spare) {
                  due.add(p); // with less than a quarter of the lease left: renew it first
                }
              }
              List<OutboxRow> out = new ArrayList<>();
              Set<Integer> unreached = new java.util.LinkedHashSet<>();
              Set<Integer> full = new java.util.LinkedHashSet<>();
              if (due.isEmpty()) {
                return new Claim(out, lost, unreached, full);
              }
              Set<String> waitingKeys = rows.waitingKeys(c, due, now);
              // In the turn's order, each partition up to what is left of the batch: under load
              // the first fills it (one claim statement, as a whole batch of one partition was),
              // and the partitions not reached go first in the next turn, so none starves.
              for (int p : due) {
                int budget = settings.batchSize() - out.size();
                if (budget <= 0) {
                  unreached.add(p);
                  continue;
                }
                List<OutboxRow> got = rows.claim(c, p, now, budget, waitingKeys);
                out.addAll(got);
                if (got.size() == budget) {
                  full.add(p);
                }
              }
              return new Claim(out, lost, unreached, full);
            });
    if (!claim.lost().isEmpty()) {
      owned = without(claim.lost());
    }
    // At once: these claimed nothing, so taking them again soon cannot send copies, and a throw
    // below must not leave them waiting for the poll.
    first.addAll(claim.unreached());
    List<OutboxRow> batch = claim.rows();
    if (batch.isEmpty()) {
      return 0;
    }
    listener.publishing(batch);
    BatchSender.Outcome outcome = sender.publish(batch);
    Set<Integer> claimedFrom = new java.util.TreeSet<>();
    batch.forEach(r -> claimedFrom.add(r.partition()));
    List<OutboxRow> done = new ArrayList<>();
    Set<Integer> fencedNow =
        tx.inTransaction(
            c -> {
              done.clear();
              // Fencing: only a lease's holder marks its partition's rows. One that lost the lease
              // while it published (paused longer than the lease) marks none of them; the new
              // owner publishes the rows again, and the inbox skips those copies.
              Map<Integer, Boolean> held = leases.holdsWithTimeToSpare(c, claimedFrom);
              Set<Integer> lost = new HashSet<>(claimedFrom);
              lost.removeAll(held.keySet());
              List<OutboxRow> mine = batch;
              if (!lost.isEmpty()) {
                mine = new ArrayList<>();
                for (OutboxRow row : batch) {
                  if (!lost.contains(row.partition())) {
                    mine.add(row);
                  }
                }
              }
              settlement.settle(c, mine, outcome, done);
              return lost;
            });
    // Only once settled: a turn that throws on the way is not taken again at once with the same
    // rows (a hot loop of copies); its partitions wait for the next wake-up or poll.
    more.addAll(claim.full());
    if (!fencedNow.isEmpty()) {
      owned = without(fencedNow);
      for (int partition : fencedNow) {
        List<OutboxRow> unmarked = batch.stream().filter(r -> r.partition() == partition).toList();
        more.remove(partition);
        fenced.incrementAndGet();
        LOG.log(
            Level.WARNING,
            "outbox partition "
                + partition
                + ": this instance ("
                + settings.instanceId()
                + ") lost the partition's lease while it published a batch of "
                + unmarked.size()
                + " rows (paused for longer than postbox.lease?); it marked none of them, and the"
                + " partition's new owner publishes them again (duplicates the inbox skips)");
        listener.fenced(partition, unmarked);
      }
    }
    if (!done.isEmpty()) {
      published.addAndGet(done.size());
      listener.published(done, clock.instant());
    }
    if (!outcome.recovered().isEmpty()) {
      resume(outcome.recovered());
      owned.forEach(this::wake); // rows held during the outage are due now
    }
    return batch.size();
  }

  /**
   * After an outage: the destinations' waiting rows become due now, in a transaction of their own
   * (a failure here must not undo the batch's settlement); if it fails they come due by their
   * schedule, at most one probe interval later.
   */
  private void resume(Set<String> destinations) {
    for (String destination : destinations) {
      try {
        tx.inTransaction(c -> rows.resume(c, destination, clock.instant()));
      } catch (RuntimeException e) {
        LOG.log(
            Level.WARNING,
            "making the rows of '"
                + destination
                + "' due after its outage failed; they come due by their schedule: "
                + e);
      }
    }
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
