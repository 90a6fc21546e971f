package dev.postbox.runtime.relay;

import dev.postbox.runtime.crash.CrashPoints;
import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Transactions;
import dev.postbox.runtime.outbox.OutboxRepository;
import dev.postbox.runtime.outbox.OutboxRow;
import dev.postbox.runtime.retention.Retention;
import dev.postbox.spi.BatchPublishException;
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
 * partition in id order, batch by batch. A batch is one transaction that
 *
 * <ol>
 *   <li>locks the partition's lease row and checks this instance still owns it, so a takeover
 *       (which updates that row) waits for the batch and two instances never publish one partition
 *       at once;
 *   <li>claims due rows in id order ({@code FOR UPDATE}; never {@code SKIP LOCKED}, which could
 *       skip an earlier row of a key), leaving out keys held up by a FAILED row or a back-off;
 *   <li>publishes them through the SPI's batch publish, per destination, in id order;
 *   <li>marks what was accepted dispatched, reschedules retriable failures with back-off, and parks
 *       permanent ones (or those out of attempts) as FAILED.
 * </ol>
 *
 * <p>A crash anywhere before the commit leaves the rows pending: they are published again, never
 * lost. Work arrives by {@link #wake(int)} right after an application commit, and by polling as a
 * safety net.
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
  private final Map<Integer, AtomicBoolean> running = new ConcurrentHashMap<>();
  private final Map<Integer, AtomicBoolean> again = new ConcurrentHashMap<>();
  private final List<ScheduledFuture<?>> schedules = new ArrayList<>();
  private final AtomicLong published = new AtomicLong();
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
    this.leases = new LeaseManager(tx, dialect, settings, clock);
    this.retention = new Retention(tx, dialect, clock);
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
    AtomicBoolean busy = running.computeIfAbsent(partition, p -> new AtomicBoolean());
    if (busy.compareAndSet(false, true)) {
      workers.execute(() -> drain(partition, busy));
    }
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
  public OutboxAdmin admin() {
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
      owned = Set.copyOf(leases.heartbeat());
      for (int p : owned) {
        if (!before.contains(p)) {
          wake(p); // a partition taken over may hold a crashed instance's rows
        }
      }
    } catch (RuntimeException e) {
      LOG.log(Level.WARNING, "lease heartbeat failed; leases expire if this persists: " + e);
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

  private void drain(int partition, AtomicBoolean busy) {
    synchronized (idle) {
      draining++;
    }
    try {
      AtomicBoolean pending = again.get(partition);
      while (!stopped && pending.getAndSet(false)) {
        int n;
        do {
          n = publishBatch(partition);
        } while (!stopped && n == settings.batchSize());
      }
    } catch (RuntimeException e) {
      LOG.log(Level.WARNING, "publishing partition " + partition + " failed; it is retried: " + e);
    } finally {
      synchronized (idle) {
        draining--;
        idle.notifyAll();
      }
      busy.set(false);
      AtomicBoolean pending = again.get(partition);
      if (!stopped && pending != null && pending.get() && busy.compareAndSet(false, true)) {
        workers.execute(() -> drain(partition, busy)); // a wake-up arrived as we finished
      }
    }
  }

  /** One batch of one partition, in one transaction; returns how many rows it claimed. */
  int publishBatch(int partition) {
    List<OutboxRow> done = new ArrayList<>();
    int claimed =
        tx.inTransaction(
            c -> {
              Instant now = clock.instant();
              if (!stillOwner(c, partition, now)) {
                owned = withoutPartition(partition);
                return 0;
              }
              List<OutboxRow> batch = rows.claim(c, partition, now, settings.batchSize());
              if (batch.isEmpty()) {
                return 0;
              }
              settle(c, batch, publish(batch), done);
              return batch.size();
            });
    if (!done.isEmpty()) {
      published.addAndGet(done.size());
      listener.published(done, clock.instant());
    }
    return claimed;
  }

  private boolean stillOwner(Connection c, int partition, Instant now) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT owner, lease_until FROM postbox_lease WHERE partition_no = ? FOR UPDATE")) {
      ps.setInt(1, partition);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return false;
        }
        Instant until = rows.dialect().read(rs, "lease_until");
        return settings.instanceId().equals(rs.getString("owner"))
            && until != null
            && until.isAfter(now);
      }
    }
  }

  /** Publishes the batch per destination, keeping id order; returns each row's failure, if any. */
  private Map<Long, BrokerException> publish(List<OutboxRow> batch) {
    Map<Long, BrokerException> failures = new HashMap<>();
    int from = 0;
    while (from < batch.size()) {
      String destination = batch.get(from).destination();
      int to = from;
      while (to < batch.size() && batch.get(to).destination().equals(destination)) {
        to++;
      }
      List<OutboxRow> group = batch.subList(from, to);
      List<Envelope> envelopes = new ArrayList<>(group.size());
      List<OutboxRow> sendable = new ArrayList<>(group.size());
      for (OutboxRow row : group) {
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
      try {
        publisher.publishAll(destination, envelopes);
        CrashPoints.reach(CrashPoints.RELAY_PUBLISHED_NOT_MARKED);
      } catch (BatchPublishException e) {
        e.failures().forEach((index, failure) -> failures.put(sendable.get(index).id(), failure));
      } catch (BrokerException e) {
        sendable.forEach(row -> failures.put(row.id(), e));
      }
      from = to;
    }
    return failures;
  }

  private void settle(
      Connection c,
      List<OutboxRow> batch,
      Map<Long, BrokerException> failures,
      List<OutboxRow> done)
      throws SQLException {
    Instant now = clock.instant();
    Set<String> stoppedKeys = new HashSet<>();
    List<Long> dispatched = new ArrayList<>();
    for (OutboxRow row : batch) {
      BrokerException failure = failures.get(row.id());
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
      int attempts = row.attempts() + 1;
      String error = failure.getClass().getSimpleName() + ": " + failure.getMessage();
      // Only a permanent error parks a row: a retriable one (the broker down or slow) retries at
      // the capped back-off for as long as it takes, so an outage never parks the backlog.
      boolean park = !failure.isRetriable();
      if (park) {
        rows.fail(c, row.id(), attempts, error);
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
    rows.dispatched(c, dispatched, now, settings.deleteOnDispatch());
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
