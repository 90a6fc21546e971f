package dev.postbox.runtime.inbox;

import dev.postbox.runtime.api.InboxListener;
import dev.postbox.runtime.api.InboxOperations;
import dev.postbox.runtime.api.InboxSubscription;
import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Transactions;
import dev.postbox.runtime.retention.Retention;
import dev.postbox.spi.Broker;
import dev.postbox.spi.Subscription;
import java.lang.System.Logger.Level;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * The inbox side of a running Postbox: one consumer loop per subscription on threads of its own,
 * each delivery batch through an {@link InboxProcessor}; in deferred mode also the subscription's
 * workers. Schedules inbox retention and the optional dead-letter re-drive, and takes the health
 * reading every five seconds. Assembled by {@code Postbox.builder()}; also the {@link
 * InboxOperations}. (About 300 lines: start, health, retention, re-drive and an ordered close of
 * every subscription.)
 */
public final class InboxEngine implements InboxOperations, AutoCloseable {

  private static final System.Logger LOG = System.getLogger(InboxEngine.class.getName());

  /**
   * A loop failing without a break for this long makes readiness DOWN (and, if its polls are what
   * fails, subscribes again): far longer than a broker's own reconnect, short enough that a wedged
   * consumer is not left for an operator.
   */
  public static final Duration RESUBSCRIBE_AFTER = Duration.ofSeconds(30);

  /**
   * One subscription to run.
   *
   * @param types the event types it handles; empty for every type
   * @param handler runs each event, in the transaction that records it
   */
  public record Registration(
      String destination, String group, Set<String> types, InboxHandler handler) {
    public Registration {
      types = Set.copyOf(types);
    }

    String name() {
      return destination + "/" + group;
    }
  }

  private final Transactions tx;
  private final Dialect dialect;
  private final Broker broker;
  private final String memberName;
  private final InboxConfig cfg;
  private final Clock clock;
  private final Map<String, RunningSubscription> running = new LinkedHashMap<>();
  private final Set<String> deadLoops = ConcurrentHashMap.newKeySet();
  private final List<CountDownLatch> loopsDone = new ArrayList<>();
  private final List<ScheduledFuture<?>> scheduled = new ArrayList<>();
  private final ExecutorService executor;
  private final InboxHealthReader healthReader;
  private volatile InboxHealth health = InboxHealth.NOT_CHECKED;
  private volatile boolean stopped;

  /**
   * Starts a loop for every registration.
   *
   * @param listeners the listener of each subscription (by name), besides the engine's own counts
   */
  public InboxEngine(
      Transactions tx,
      Dialect dialect,
      Broker broker,
      String memberName,
      InboxConfig cfg,
      Clock clock,
      ScheduledExecutorService scheduler,
      ThreadFactory threads,
      List<Registration> registrations,
      Function<String, InboxListener> listeners) {
    this.tx = tx;
    this.dialect = dialect;
    this.broker = broker;
    this.memberName = memberName;
    this.cfg = cfg;
    this.clock = clock;
    this.executor = Executors.newCachedThreadPool(threads);
    this.healthReader =
        new InboxHealthReader(broker, tx, new DeadLetterRepository(dialect), cfg.stuckAfter());
    if (registrations.isEmpty()) {
      health = InboxHealth.NONE;
      return;
    }
    try {
      for (Registration r : registrations) {
        if (running.containsKey(r.name())) {
          throw new IllegalStateException("subscription " + r.name() + " is registered twice");
        }
        start(r, listeners.apply(r.name()));
      }
      Retention retention = Retention.inbox(tx, dialect, clock);
      scheduled.add(
          scheduler.scheduleWithFixedDelay(() -> purge(retention), 1, 10 * 60, TimeUnit.SECONDS));
      if (cfg.redriveDelay() != null) {
        long every = Math.max(1, cfg.redriveDelay().toSeconds() / 4);
        scheduled.add(
            scheduler.scheduleWithFixedDelay(this::redrive, every, every, TimeUnit.SECONDS));
      }
      if (running.values().stream().anyMatch(r -> r.settings().sequenced())) {
        scheduled.add(
            scheduler.scheduleWithFixedDelay(this::sweepParked, 10, 10, TimeUnit.SECONDS));
      }
      scheduled.add(scheduler.scheduleWithFixedDelay(this::refreshHealth, 0, 5, TimeUnit.SECONDS));
    } catch (RuntimeException | Error e) {
      close(); // the loops that did start stop again
      throw e;
    }
  }

  private void start(Registration r, InboxListener also) {
    // Retries wait in the database, not in the broker: no delay is cut to the broker's nack limit.
    InboxSettings settings = cfg.settingsFor(r.destination(), r.group(), r.types());
    String name = settings.subscription();
    InboxCounting counts = new InboxCounting(also);
    InboxHandler handler =
        (connection, event) -> {
          long began = System.nanoTime();
          try {
            r.handler().handle(connection, event);
          } finally {
            also.handled(name, Duration.ofNanos(System.nanoTime() - began));
          }
        };
    // The queue's workers: every event in deferred mode; retries and the keys behind them inline.
    DeferredInbox queue = new DeferredInbox(tx, dialect, settings, handler, clock, counts);
    InboxListener listener = counts.waking(queue);
    InboxProcessor inbox =
        new InboxProcessor(
            tx,
            dialect,
            settings,
            handler,
            clock,
            listener,
            settings.workers() > 1 && !settings.deferred() ? executor : null);
    warnIfTheWindowIsShort(r.destination());
    Subscription subscription = Subscription.of(r.destination(), r.group()).withMember(memberName);
    ConsumerLoop loop =
        new ConsumerLoop(
            name,
            broker.subscribe(subscription),
            () -> broker.subscribe(subscription),
            inbox::process,
            RESUBSCRIBE_AFTER,
            Duration.ofSeconds(1),
            System::nanoTime);
    // A delivery left unacknowledged while the database is down is still the same stall.
    Duration active = settings.retry().maxDelay().multipliedBy(2).plusMinutes(1);
    if (cfg.stuckAfter().compareTo(settings.retry().maxDelay()) <= 0) {
      LOG.log(
          Level.WARNING,
          "postbox.inbox.stuck-after ("
              + cfg.stuckAfter()
              + ") is not above the retries' longest delay ("
              + settings.retry().maxDelay()
              + "): a subscription is reported stuck while it only waits to retry");
    }
    Stalls watch = new Stalls(active, System::nanoTime);
    loop.watchedBy(watch);
    DeadLetters letters =
        new DeadLetters(tx, dialect, name, handler, clock, cfg.dedupWindow(), settings.sequenced());
    queue.start(executor); // only once subscribed: a failed start leaves no worker running
    running.put(
        name,
        new RunningSubscription(
            settings,
            r.destination(),
            letters,
            queue,
            loop,
            watch,
            inbox.front(),
            counts,
            new InboxCounters(tx, dialect)));
    CountDownLatch done = new CountDownLatch(1);
    loopsDone.add(done);
    executor.execute(() -> consume(name, loop, done));
    LOG.log(
        Level.INFO,
        "Postbox inbox consuming "
            + name
            + (settings.deferred() ? " (deferred, " : " (inline, ")
            + settings.workers()
            + " workers) for types "
            + (r.types().isEmpty() ? "(all)" : r.types()));
  }

  private void consume(String subscription, ConsumerLoop loop, CountDownLatch done) {
    boolean ended = false;
    try {
      loop.run();
      ended = true;
    } finally {
      if (!ended && !stopped) {
        deadLoops.add(subscription); // an Error escaped: only a restart brings the loop back
      }
      done.countDown();
    }
  }

  private void warnIfTheWindowIsShort(String destination) {
    try {
      InboxConfig.horizonWarning(
              destination, cfg.dedupWindow(), broker.redeliveryHorizon(destination))
          .ifPresent(w -> LOG.log(Level.WARNING, w));
    } catch (RuntimeException e) {
      LOG.log(
          Level.INFO,
          "could not read the broker's redelivery horizon for " + destination + ": " + e);
    }
  }

  @Override
  public List<InboxSubscription> subscriptions() {
    return List.copyOf(running.values());
  }

  @Override
  public Optional<InboxSubscription> subscription(String name) {
    return Optional.ofNullable(running.get(name));
  }

  /**
   * The smallest {@code max-payload-bytes} of this instance's subscriptions to a destination, if it
   * has any: an event recorded here for that destination must not become their OVERSIZED dead
   * letter.
   */
  public OptionalInt payloadLimit(String destination) {
    return running.values().stream()
        .filter(r -> r.destination().equals(destination))
        .mapToInt(r -> r.settings().maxPayloadBytes())
        .min();
  }

  /** The running subscriptions, with what only the runtime's wiring needs (metrics). */
  public List<RunningSubscription> running() {
    return List.copyOf(running.values());
  }

  /** Subscriptions whose consumer loop ended while the application was running. */
  public Set<String> deadLoops() {
    return Set.copyOf(deadLoops);
  }

  /** The last health reading (every five seconds). */
  public InboxHealth health() {
    return health;
  }

  private void refreshHealth() {
    health = healthReader.read(running.values());
  }

  private void purge(Retention retention) {
    try {
      int deleted = retention.purge(cfg.dedupWindow(), cfg.retentionBatch());
      if (deleted > 0) {
        LOG.log(Level.INFO, "inbox retention deleted " + deleted + " rows past the dedup window");
      }
    } catch (RuntimeException e) {
      LOG.log(Level.WARNING, "inbox retention failed; next run retries: " + e);
    }
  }

  /** Sequenced subscriptions: parked letters that nothing holds back any more are replayed. */
  private void sweepParked() {
    for (RunningSubscription r : running.values()) {
      try {
        int replayed = r.deadLetters.sweepParked();
        if (replayed > 0) {
          LOG.log(Level.INFO, "replayed " + replayed + " parked letters of " + r.name());
        }
      } catch (VirtualMachineError fatal) {
        throw fatal;
      } catch (RuntimeException | Error e) {
        // an Error must not end the schedule: the next run tries again
        LOG.log(Level.WARNING, "the parked letters of " + r.name() + " could not be swept: " + e);
      }
    }
  }

  private void redrive() {
    for (RunningSubscription r : running.values()) {
      try {
        int replayed = r.deadLetters.redrive(cfg.redriveDelay(), cfg.redriveMaxTimes(), 100);
        if (replayed > 0) {
          LOG.log(Level.INFO, "re-drove " + replayed + " dead letters of " + r.name());
        }
      } catch (VirtualMachineError fatal) {
        throw fatal;
      } catch (RuntimeException | Error e) {
        // an Error must not end the schedule: the next run tries again
        LOG.log(Level.WARNING, "dead-letter re-drive of " + r.name() + " failed: " + e);
      }
    }
  }

  /** Stops the loops and workers and waits up to 30 s for each loop to finish its batch. */
  @Override
  public void close() {
    stopped = true;
    scheduled.forEach(f -> f.cancel(false));
    running.values().forEach(r -> r.loop.close());
    running.values().forEach(r -> r.queue.close());
    for (CountDownLatch done : loopsDone) {
      try {
        done.await(30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    executor.shutdown();
  }
}
