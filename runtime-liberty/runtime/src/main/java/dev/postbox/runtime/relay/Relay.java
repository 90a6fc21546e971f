package dev.postbox.runtime.relay;

import dev.postbox.runtime.api.BrokerOutage;
import dev.postbox.runtime.checkpoint.Checkpoint;
import dev.postbox.runtime.checkpoint.Checkpoints;
import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Transactions;
import dev.postbox.runtime.outbox.OutboxRepository;
import dev.postbox.runtime.outbox.OutboxRow;
import dev.postbox.runtime.retention.Retention;
import dev.postbox.spi.BatchPublishException;
import dev.postbox.spi.Batches;
import dev.postbox.spi.BrokerException;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.Publisher;
import java.lang.System.Logger.Level;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
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
 */
public final class Relay implements AutoCloseable {

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
   * One batch of one partition: claim in a short transaction, publish outside any, settle in a
   * second short transaction. Returns how many rows it claimed.
   */
  int publishBatch(int partition) {
    List<OutboxRow> batch =
        tx.inTransaction(
            c -> {
              Instant now = clock.instant();
              Boolean owner = ownsWithTimeToSpare(c, partition);
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
    Outcome outcome = publish(batch);
    List<OutboxRow> done = new ArrayList<>();
    boolean settled =
        tx.inTransaction(
            c -> {
              // Fencing: only the lease's holder marks rows. One that lost the lease while it
              // published (paused longer than the lease) marks nothing; the new owner publishes
              // the rows again, and the inbox skips those copies.
              if (ownsWithTimeToSpare(c, partition) == null) {
                return false;
              }
              settle(c, batch, outcome, done);
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
   * Whether this instance holds the partition's lease (locking its row, so a takeover skips it
   * until the claim or settle commits): true with at least a quarter of the lease left, false with
   * less (the heartbeat is late), null if another instance holds it or it expired.
   */
  private Boolean ownsWithTimeToSpare(Connection c, int partition) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT owner, lease_until, "
                + rows.dialect().now()
                + " AS db_now FROM postbox_lease WHERE partition_no = ? FOR UPDATE")) {
      ps.setInt(1, partition);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return null;
        }
        Instant until = rows.dialect().read(rs, "lease_until");
        Instant now = rows.dialect().read(rs, "db_now"); // leases live in the database's time
        if (!settings.instanceId().equals(rs.getString("owner"))
            || until == null
            || !until.isAfter(now)) {
          return null;
        }
        return until.isAfter(now.plus(settings.leaseDuration().dividedBy(4)));
      }
    }
  }

  /**
   * What a batch's broker calls came to.
   *
   * @param failures each failed row's error
   * @param held rows not sent because their destination is out, with when to try them again
   * @param recovered destinations whose outage this batch ended
   */
  private record Outcome(
      Map<Long, BrokerException> failures, Map<Long, Instant> held, Set<String> recovered) {}

  /** Publishes the batch per destination, keeping id order; no transaction is open meanwhile. */
  private Outcome publish(List<OutboxRow> batch) {
    Map<Long, BrokerException> failures = new HashMap<>();
    Map<Long, Instant> held = new HashMap<>();
    Set<String> recovered = new HashSet<>();
    Map<String, BrokerException> failedKeys = new HashMap<>();
    int from = 0;
    while (from < batch.size()) {
      String destination = batch.get(from).destination();
      int to = from;
      while (to < batch.size() && batch.get(to).destination().equals(destination)) {
        to++;
      }
      List<OutboxRow> group = batch.subList(from, to);
      from = to;
      publishGroup(destination, group, failures, held, recovered, failedKeys);
    }
    return new Outcome(failures, held, recovered);
  }

  /** One destination's run of rows: sends what may go, records what failed, by row and by key. */
  private void publishGroup(
      String destination,
      List<OutboxRow> group,
      Map<Long, BrokerException> failures,
      Map<Long, Instant> held,
      Set<String> recovered,
      Map<String, BrokerException> failedKeys) {
    try {
      sendGroup(destination, group, failures, held, recovered, failedKeys);
    } finally {
      for (OutboxRow row : group) {
        BrokerException failure = failures.get(row.id());
        if (failure != null && row.key() != null) {
          failedKeys.putIfAbsent(row.key(), failure);
        }
      }
    }
  }

  private void sendGroup(
      String destination,
      List<OutboxRow> group,
      Map<Long, BrokerException> failures,
      Map<Long, Instant> held,
      Set<String> recovered,
      Map<String, BrokerException> failedKeys) {
    List<Envelope> envelopes = new ArrayList<>(group.size());
    List<OutboxRow> sendable = new ArrayList<>(group.size());
    for (OutboxRow row : group) {
      BrokerException earlier = row.key() == null ? null : failedKeys.get(row.key());
      if (earlier != null) {
        // Order is per key, across destinations: a row never overtakes an earlier row of its
        // key that did not go, whatever destination either has.
        failures.put(row.id(), Batches.heldBack(earlier));
        continue;
      }
      try {
        envelopes.add(row.toEnvelope());
        sendable.add(row);
      } catch (IllegalArgumentException poison) {
        failures.put(
            row.id(),
            new dev.postbox.spi.PermanentBrokerException(
                "row is not a valid event: " + poison.getMessage()));
      }
    }
    if (sendable.isEmpty()) {
      return;
    }
    Outages.Outage out = outages.hold(destination, clock.instant());
    if (out != null) {
      BrokerException wait = Outages.held(destination, out);
      for (OutboxRow row : sendable) {
        failures.put(row.id(), wait);
        held.put(row.id(), out.heldUntil(clock.instant(), outages.interval()));
      }
      return;
    }
    BrokerException whole = null; // set when nothing went through and every failure is retriable
    boolean answered = false;
    try {
      publisher.publishAll(destination, envelopes);
      Checkpoints.reach(Checkpoint.RELAY_PUBLISHED_NOT_MARKED);
      answered = true;
      if (outages.succeeded(destination, clock.instant()) != null) {
        recovered.add(destination);
      }
    } catch (BatchPublishException e) {
      e.failures().forEach((index, failure) -> failures.put(sendable.get(index).id(), failure));
      boolean allRetriable = e.failures().values().stream().allMatch(BrokerException::isRetriable);
      if (e.failures().size() < sendable.size()) {
        answered = true;
        if (outages.succeeded(destination, clock.instant()) != null) {
          recovered.add(destination);
        }
      } else if (allRetriable) {
        whole = e.failures().values().iterator().next();
      }
    } catch (BrokerException e) {
      sendable.forEach(row -> failures.put(row.id(), e));
      if (e.isRetriable()) {
        whole = e;
      }
    } finally {
      if (whole != null) {
        outages.failed(destination, whole, clock.instant());
      } else if (!answered) {
        outages.probeAbandoned(destination); // a permanent error, or an unexpected one
      }
    }
  }

  private void settle(Connection c, List<OutboxRow> batch, Outcome outcome, List<OutboxRow> done)
      throws SQLException {
    Instant now = clock.instant();
    Set<String> stoppedKeys = new HashSet<>();
    List<Long> dispatched = new ArrayList<>();
    Map<Instant, List<Long>> held = new HashMap<>();
    Map<Instant, String> heldError = new HashMap<>();
    for (OutboxRow row : batch) {
      BrokerException failure = outcome.failures().get(row.id());
      if (failure == null) {
        dispatched.add(row.id());
        done.add(row);
        continue;
      }
      if (row.key() != null && stoppedKeys.contains(row.key())) {
        continue; // held back behind an earlier row of its key: not an attempt of its own
      }
      if (row.key() != null) {
        stoppedKeys.add(row.key());
      }
      String error = failure.getClass().getSimpleName() + ": " + failure.getMessage();
      Instant heldUntil = outcome.held().get(row.id());
      if (heldUntil != null) {
        // Not sent, its destination being out: no attempt of its own; due at the next probe.
        held.computeIfAbsent(heldUntil, t -> new ArrayList<>()).add(row.id());
        heldError.putIfAbsent(heldUntil, error);
        continue;
      }
      int attempts = row.attempts() + 1;
      // Only a permanent error parks a row: a retriable one (the broker down or slow) retries at
      // the capped back-off for as long as it takes, so an outage never parks the backlog.
      boolean park = !failure.isRetriable();
      if (park) {
        rows.fail(c, row.id(), attempts, error, now);
      } else {
        if (attempts % settings.retry().maxAttempts() == 0) {
          // Still retriable after this many tries: say so, in case the cause never heals (a
          // misrouted destination); the operator can discard a failing PENDING row.
          LOG.log(
              Level.WARNING,
              "outbox row "
                  + row.id()
                  + " (event "
                  + row.eventId()
                  + " to '"
                  + row.destination()
                  + "') has failed "
                  + attempts
                  + " times and keeps retrying, at most every "
                  + settings.retry().maxDelay()
                  + "; if the cause cannot heal, discard it (OutboxAdmin.discard). Last error: "
                  + error);
        }
        rows.reschedule(
            c, row.id(), attempts, now.plus(settings.retry().delayAfter(attempts)), error);
      }
      listener.failed(row, error, park);
    }
    for (Map.Entry<Instant, List<Long>> h : held.entrySet()) {
      rows.postpone(c, h.getValue(), h.getKey(), heldError.get(h.getKey()));
    }
    rows.dispatched(c, dispatched, now, settings.deleteOnDispatch());
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
