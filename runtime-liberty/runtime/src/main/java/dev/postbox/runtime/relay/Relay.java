package dev.postbox.runtime.relay;

import dev.postbox.runtime.api.BrokerOutage;
import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Transactions;
import dev.postbox.runtime.outbox.OutboxRepository;
import dev.postbox.runtime.outbox.OutboxRow;
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
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Publishes committed outbox rows: one instance of it per application instance.
 *
 * <p>It holds leases on some of the P partitions ({@link LeaseManager}) and publishes each held
 * partition in id order, batch by batch, with at most {@code workerThreads} batches at once (the
 * partitions with work take turns, a batch each). A batch is
 *
 * <ol>
 *   <li>a short transaction that locks the partition's lease row, checks this instance still owns
 *       it with time to spare, and claims due rows in id order, leaving out keys held up by a
 *       FAILED row or a back-off (never {@code SKIP LOCKED}, which could skip an earlier row of a
 *       key);
 *   <li>the broker call, per destination, in id order, <em>outside any transaction</em>: a slow or
 *       absent broker holds a worker thread, never a pooled connection or a lock that the
 *       application's own transactions wait for;
 *   <li>a second short transaction that marks what was accepted dispatched, reschedules retriable
 *       failures with back-off, and parks permanent ones as FAILED.
 * </ol>
 *
 * <p>Only the lease owner claims a partition's rows, and within an instance one batch of a
 * partition runs at a time, so rows are published in order. A crash, or a lease lost during the
 * broker call (a pause longer than the lease), leaves rows pending: they are published again, never
 * lost, and the inbox drops the copy. A destination whose whole publish fails with retriable errors
 * is out ({@link Outages}): one batch at a time probes it while the rest wait without calling the
 * broker, and when it answers again its waiting rows go at once. Work arrives by {@link #wake(int)}
 * right after an application commit, and by polling as a safety net.
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
  private final java.util.concurrent.Semaphore slots;
  private final java.util.Queue<Integer> ready = new java.util.concurrent.ConcurrentLinkedQueue<>();
  private final Map<Integer, AtomicBoolean> queued = new ConcurrentHashMap<>();
  private final Map<Integer, AtomicBoolean> again = new ConcurrentHashMap<>();
  private final Set<Integer> inFlight = ConcurrentHashMap.newKeySet();
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
    this.retention = new Retention(tx, dialect, clock);
    this.outages = new Outages(settings.retry(), settings.outageProbeInterval());
    this.sender = new BatchSender(publisher, outages, clock);
    this.settlement = new Settlement(rows, settings, clock, listener);
    this.slots = new java.util.concurrent.Semaphore(settings.workerThreads());
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

  /** Wakes the partition's publisher now, if this instance holds it. Cheap; call after commit. */
  public void wake(int partition) {
    if (stopped || !owned.contains(partition)) {
      return; // the owner's poll picks it up
    }
    again.computeIfAbsent(partition, p -> new AtomicBoolean()).set(true);
    if (queued.computeIfAbsent(partition, p -> new AtomicBoolean()).compareAndSet(false, true)) {
      ready.add(partition);
    }
    dispatch(); // also when it was queued already: its worker may have been refused
  }

  /** Starts workers for queued partitions, up to {@code workerThreads} at once. */
  private void dispatch() {
    while (!stopped && !ready.isEmpty() && slots.tryAcquire()) {
      try {
        workers.execute(this::work);
      } catch (RuntimeException e) {
        slots.release();
        LOG.log(Level.WARNING, "the relay's executor refused work; the next wake-up retries: " + e);
        return;
      }
    }
  }

  /** A worker: takes queued partitions, one batch each, until none is queued. */
  private void work() {
    synchronized (idle) {
      draining++;
    }
    try {
      Integer partition;
      while (!stopped && (partition = ready.poll()) != null) {
        turn(partition);
      }
    } finally {
      synchronized (idle) {
        draining--;
        idle.notifyAll();
      }
      slots.release();
      if (!stopped && !ready.isEmpty()) {
        dispatch(); // queued after our last look, while every slot was taken
      }
    }
  }

  /** One batch of the partition; queues it again while it has more, or was woken meanwhile. */
  private void turn(int partition) {
    AtomicBoolean pending = again.get(partition);
    AtomicBoolean inQueue = queued.get(partition);
    boolean more = false;
    inFlight.add(partition);
    try {
      pending.set(false);
      more = publishBatch(partition) == settings.batchSize();
    } catch (RuntimeException e) {
      LOG.log(Level.WARNING, "publishing partition " + partition + " failed; it is retried: " + e);
    } finally {
      inFlight.remove(partition);
      if (!stopped && (more || pending.get())) {
        ready.add(partition); // still queued: its turn comes again after the others'
      } else {
        inQueue.set(false);
        if (!stopped && pending.get() && inQueue.compareAndSet(false, true)) {
          ready.add(partition); // woken between our look and the flag
        }
      }
    }
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

  /**
   * One batch of one partition: claim in a short transaction that locks the partition's lease row
   * (a takeover skips it until the claim commits), publish outside any, settle in a second short
   * transaction, fenced by the lease. Returns how many rows it claimed.
   *
   * <p>(#20 tried a claim that locked nothing, one flush per batch instead of two; the SQS FIFO
   * crash harness then left orders waiting after a restart in two runs of two, and passed with the
   * locks back. Until that is understood, the claim locks.)
   */
  int publishBatch(int partition) {
    List<OutboxRow> batch =
        tx.inTransaction(
            c -> {
              Instant now = clock.instant();
              Boolean owner = leases.holdsWithTimeToSpare(c, partition);
              if (owner == null) {
                owned = withoutPartition(partition);
                return List.<OutboxRow>of();
              }
              if (!owner) {
                return List.<OutboxRow>of(); // the lease runs out soon: renew it first
              }
              return rows.claim(c, partition, now, settings.batchSize());
            });
    if (batch.isEmpty()) {
      return 0;
    }
    listener.publishing(batch);
    BatchSender.Outcome outcome = sender.publish(batch);
    List<OutboxRow> done = new ArrayList<>();
    boolean settled =
        tx.inTransaction(
            c -> {
              // Fencing: only the lease's holder marks rows. One that lost the lease while it
              // published (paused longer than the lease) marks nothing; the new owner publishes
              // the rows again, and the inbox skips those copies.
              if (leases.holdsWithTimeToSpare(c, partition) == null) {
                return false;
              }
              settlement.settle(c, batch, outcome, done);
              return true;
            });
    if (!settled) {
      owned = withoutPartition(partition);
      fenced.incrementAndGet();
      LOG.log(
          Level.WARNING,
          "outbox partition "
              + partition
              + ": this instance ("
              + settings.instanceId()
              + ") lost the partition's lease while it published a batch of "
              + batch.size()
              + " rows (paused for longer than postbox.lease?); it marked none of them, and the"
              + " partition's new owner publishes them again (duplicates the inbox skips)");
      listener.fenced(partition, batch);
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

  private Set<Integer> withoutPartition(int partition) {
    Set<Integer> s = new HashSet<>(owned);
    s.remove(partition);
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
