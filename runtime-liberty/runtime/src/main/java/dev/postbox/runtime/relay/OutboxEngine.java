package dev.postbox.runtime.relay;

import dev.postbox.runtime.api.BrokerOutage;
import dev.postbox.runtime.api.FailedFilter;
import dev.postbox.runtime.api.FailedRow;
import dev.postbox.runtime.api.Lag;
import dev.postbox.runtime.api.Lease;
import dev.postbox.runtime.api.OutboxOperations;
import dev.postbox.runtime.api.OutboxRow;
import dev.postbox.runtime.api.RelayListener;
import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Transactions;
import dev.postbox.runtime.outbox.OutboxRepository;
import dev.postbox.runtime.retention.Retention;
import dev.postbox.spi.Publisher;
import java.lang.System.Logger.Level;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;

/**
 * The outbox side of a running Postbox: the relay (when enabled) on workers of its own, PostgreSQL
 * notifications between instances, the lag reading every two seconds, and the automatic re-drive of
 * FAILED rows. Assembled by {@code Postbox.builder()}; also the {@link OutboxOperations}.
 */
public final class OutboxEngine implements OutboxOperations, AutoCloseable {

  private static final System.Logger LOG = System.getLogger(OutboxEngine.class.getName());

  /**
   * The automatic re-drive of FAILED outbox rows.
   *
   * @param delay how long a row stays FAILED before it is sent again; null turns it off
   * @param maxTimes how often one row is re-driven at most
   */
  public record Redrive(Duration delay, int maxTimes) {}

  private final Transactions tx;
  private final Dialect dialect;
  private final RelaySettings settings;
  private final Clock clock;
  private final OutboxRepository rows;
  private final OutboxAdmin admin;
  private final List<ScheduledFuture<?>> scheduled = new ArrayList<>();
  private final AtomicReference<Lag> lag = new AtomicReference<>();
  private final AtomicReference<String> lagError = new AtomicReference<>("not started");
  private final AtomicLong failures = new AtomicLong();
  private final AtomicLong fencedBatches = new AtomicLong();
  private final AtomicLong expired = new AtomicLong();
  private ExecutorService workers;
  private Relay relay;
  private OutboxNotifications notifications;

  /**
   * Starts the outbox side.
   *
   * @param publisher the broker's publisher; null runs no relay (events are recorded only)
   * @param listener hears what the relay does, besides the engine's own counts
   */
  public OutboxEngine(
      Transactions tx,
      Dialect dialect,
      DataSource dataSource,
      Publisher publisher,
      RelaySettings settings,
      Redrive redrive,
      Clock clock,
      ScheduledExecutorService scheduler,
      ThreadFactory threads,
      RelayListener listener) {
    this.tx = tx;
    this.dialect = dialect;
    this.settings = settings;
    this.clock = clock;
    this.rows = new OutboxRepository(dialect, settings.partitions());
    this.admin = new OutboxAdmin(tx, rows, clock);
    scheduled.add(scheduler.scheduleWithFixedDelay(this::refreshLag, 0, 2, TimeUnit.SECONDS));
    if (publisher == null) {
      return;
    }
    try {
      workers = Executors.newFixedThreadPool(settings.workerThreads(), threads);
      relay =
          new Relay(
              tx, dialect, publisher, settings, clock, scheduler, workers, counting(listener));
      relay.start();
      Retention retention = Retention.outbox(tx, dialect, clock);
      Retention ended = Retention.outboxEnded(tx, dialect, clock);
      scheduled.add(
          scheduler.scheduleWithFixedDelay(
              () -> {
                purge(retention);
                purge(ended);
              },
              1,
              1,
              TimeUnit.MINUTES));
      if (dialect.canAnnounce()) {
        notifications = new OutboxNotifications(dataSource, relay::wake, relay::expectDue, threads);
        notifications.start();
      }
      if (redrive.delay() != null) {
        long every = Math.max(1, redrive.delay().toSeconds() / 4);
        scheduled.add(
            scheduler.scheduleWithFixedDelay(
                () -> redrive(redrive), every, every, TimeUnit.SECONDS));
      }
    } catch (RuntimeException | Error e) {
      close(); // what did start stops again
      throw e;
    }
  }

  /** Deletes settled rows older than the retention, in bounded batches; returns how many. */
  private int purge(Retention retention) {
    try {
      return retention.purge(settings.retention(), settings.retentionBatch());
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "outbox retention failed; it runs again later: " + e);
      return 0;
    }
  }

  /**
   * Whether the wake-up across instances is listening: empty where there is none (not PostgreSQL,
   * or no relay here), false while it reconnects or after it turned itself off.
   */
  public java.util.Optional<Boolean> wakeUpListening() {
    OutboxNotifications n = notifications;
    return n == null ? java.util.Optional.empty() : java.util.Optional.of(n.listening());
  }

  /** Whether a relay runs in this instance. */
  public boolean relayRuns() {
    return relay != null;
  }

  /** The outbox's SQL for this database. */
  public OutboxRepository repository() {
    return rows;
  }

  /**
   * After a commit that recorded events in these partitions: wakes this instance's relay for the
   * ones it holds and announces the rest to the other instances (PostgreSQL), whose relays would
   * otherwise find them at their next poll.
   */
  public void committed(Set<Integer> partitions) {
    Relay r = relay;
    if (r == null) {
      return;
    }
    List<Integer> elsewhere = new ArrayList<>();
    Set<Integer> held = r.ownedPartitions();
    for (int p : partitions) {
      if (held.contains(p)) {
        r.wake(p);
      } else {
        elsewhere.add(p);
      }
    }
    OutboxNotifications n = notifications;
    if (n != null && !elsewhere.isEmpty()) {
      n.announce(elsewhere);
    }
  }

  /** After a commit that recorded scheduled rows due then: arms the due timers for the earliest. */
  public void scheduled(List<Instant> dues) {
    Relay r = relay;
    if (r == null || dues.isEmpty()) {
      return;
    }
    Instant first = java.util.Collections.min(dues);
    r.expectDue(first);
    OutboxNotifications n = notifications;
    if (n != null) {
      n.announceDue(first); // the instance that holds the row's partition may be another
    }
  }

  /** Rows the relay found expired (never published) since this instance started. */
  public long expiredRows() {
    return expired.get();
  }

  /** The last lag reading (every two seconds), or null before the first; see {@link #lagError}. */
  public Lag cachedLag() {
    return lag.get();
  }

  /** Why the last lag reading failed, or null if it succeeded. */
  public String lagError() {
    return lagError.get();
  }

  /** Seconds since the oldest pending row was recorded, by the last reading; 0 when none. */
  public double oldestPendingAgeSeconds() {
    Lag l = lag.get();
    if (l == null || l.oldestPending() == null) {
      return 0;
    }
    // Not clamped at 0: a row from the future is a clock or time-zone fault, and must show.
    return Duration.between(l.oldestPending(), clock.instant()).toMillis() / 1000.0;
  }

  /** Publishes that failed since this instance started. */
  public long failures() {
    return failures.get();
  }

  /** Batches fenced off since this instance started (see {@link RelayListener#fenced}). */
  public long fencedBatches() {
    return fencedBatches.get();
  }

  @Override
  public Lag lag() {
    return admin.lag();
  }

  @Override
  public List<FailedRow> failed(int limit) {
    return admin.failed(limit);
  }

  @Override
  public boolean retry(long id) {
    return admin.retry(id);
  }

  @Override
  public boolean discard(long id) {
    return admin.discard(id);
  }

  @Override
  public int retryAll(FailedFilter filter) {
    return admin.retryAll(filter);
  }

  @Override
  public int discardAll(FailedFilter filter) {
    return admin.discardAll(filter);
  }

  @Override
  public List<dev.postbox.runtime.api.ScheduledRow> scheduled(
      dev.postbox.runtime.api.ScheduledFilter filter, long afterId, int limit) {
    return admin.scheduled(filter, afterId, limit);
  }

  @Override
  public boolean cancelScheduled(String eventId) {
    return admin.cancelScheduled(eventId);
  }

  @Override
  public int cancelAllScheduled(dev.postbox.runtime.api.ScheduledFilter filter) {
    return admin.cancelAllScheduled(filter);
  }

  @Override
  public List<Lease> leases() {
    return admin.leases();
  }

  @Override
  public Instant databaseNow() {
    return admin.databaseNow();
  }

  @Override
  public long publishedByThisInstance() {
    return relay == null ? 0 : relay.publishedCount();
  }

  @Override
  public Set<Integer> ownedPartitions() {
    return relay == null ? Set.of() : relay.ownedPartitions();
  }

  @Override
  public List<BrokerOutage> brokerOutages() {
    return relay == null ? List.of() : relay.brokerOutages();
  }

  /** Stops the relay and its workers; the broker is the caller's to close afterwards. */
  @Override
  public void close() {
    scheduled.forEach(f -> f.cancel(false));
    if (notifications != null) {
      notifications.close();
    }
    if (relay != null) {
      relay.close();
    }
    if (workers != null) {
      workers.shutdown();
    }
  }

  /** Lag readings since the last count of scheduled rows; counted every 15th (30 s). */
  private int sinceScheduledCount = Integer.MAX_VALUE - 1;

  private void refreshLag() {
    try {
      Lag previous = lag.get();
      boolean count = ++sinceScheduledCount >= 15 || previous == null;
      Lag now = admin.lag(count);
      if (count) {
        sinceScheduledCount = 0;
      } else {
        now =
            new Lag(
                now.pending(),
                now.failed(),
                now.oldestPending(),
                previous.scheduled(),
                now.nextDue());
      }
      lag.set(now);
      lagError.set(null);
    } catch (RuntimeException e) {
      lagError.set(e.toString());
    }
  }

  private void redrive(Redrive redrive) {
    try {
      int n = admin.redrive(redrive.delay(), redrive.maxTimes());
      if (n > 0) {
        LOG.log(Level.INFO, "re-drove " + n + " FAILED outbox rows");
      }
    } catch (RuntimeException e) {
      LOG.log(Level.WARNING, "outbox re-drive failed; next run retries: " + e);
    }
  }

  /**
   * The relay's listener: counts failures and fenced batches, and passes everything on to the
   * application's listener, whose exceptions are logged (once) and never reach the relay: a broken
   * metrics or tracing hook must not stop a batch from being published or marked.
   */
  private RelayListener counting(RelayListener also) {
    java.util.concurrent.atomic.AtomicBoolean warned =
        new java.util.concurrent.atomic.AtomicBoolean();
    java.util.function.Consumer<Runnable> safely =
        call -> {
          try {
            call.run();
          } catch (RuntimeException e) {
            if (warned.compareAndSet(false, true)) {
              LOG.log(Level.WARNING, "the relay listener failed (ignored from now on): " + e, e);
            }
          }
        };
    return new RelayListener() {
      @Override
      public void publishing(List<OutboxRow> batch) {
        safely.accept(() -> also.publishing(batch));
      }

      @Override
      public void published(List<OutboxRow> rows, Instant committedAt) {
        safely.accept(() -> also.published(rows, committedAt));
      }

      @Override
      public void failed(OutboxRow row, String error, boolean parked) {
        failures.incrementAndGet();
        safely.accept(() -> also.failed(row, error, parked));
      }

      @Override
      public void fenced(int partition, List<OutboxRow> rows) {
        fencedBatches.incrementAndGet();
        safely.accept(() -> also.fenced(partition, rows));
      }

      @Override
      public void expired(List<OutboxRow> rows) {
        expired.addAndGet(rows.size());
        safely.accept(() -> also.expired(rows));
      }
    };
  }
}
