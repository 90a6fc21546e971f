package dev.postbox.runtime.jakarta;

import dev.postbox.runtime.api.DeadLetterReason;
import dev.postbox.runtime.api.UnprocessableEventException;
import dev.postbox.runtime.inbox.ConsumerLoop;
import dev.postbox.runtime.inbox.DeadLetters;
import dev.postbox.runtime.inbox.DeferredInbox;
import dev.postbox.runtime.inbox.InboxHandler;
import dev.postbox.runtime.inbox.InboxListener;
import dev.postbox.runtime.inbox.InboxProcessor;
import dev.postbox.runtime.inbox.InboxRetention;
import dev.postbox.runtime.inbox.InboxSettings;
import dev.postbox.runtime.inbox.Stalls;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.Subscription;
import jakarta.annotation.Resource;
import jakarta.enterprise.concurrent.ManagedScheduledExecutorService;
import jakarta.enterprise.concurrent.ManagedThreadFactory;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.enterprise.event.Shutdown;
import jakarta.enterprise.event.Startup;
import jakarta.enterprise.inject.Any;
import jakarta.enterprise.inject.Instance;
import jakarta.inject.Inject;
import java.lang.System.Logger.Level;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.eclipse.microprofile.config.Config;
import org.eclipse.microprofile.metrics.Counter;
import org.eclipse.microprofile.metrics.MetricRegistry;
import org.eclipse.microprofile.metrics.Tag;
import org.eclipse.microprofile.metrics.Timer;

/**
 * Runs one consumer loop per inbox subscription (destination + group) found among the {@link
 * EventHandler} beans, on threads of its own (ManagedThreadFactory), each delivery batch through
 * the inbox engine in JTA transactions; in deferred mode also the subscription's workers. Schedules
 * inbox retention and the optional dead-letter re-drive, and keeps the broker and database readings
 * that {@link InboxReadiness} reports.
 */
@ApplicationScoped
public class InboxRuntime {

  private static final System.Logger LOG = System.getLogger(InboxRuntime.class.getName());

  /**
   * A loop failing without a break for this long makes readiness DOWN (and, if its polls are what
   * fails, subscribes again): far longer than a broker's own reconnect, short enough that a wedged
   * consumer is not left for an operator.
   */
  static final Duration RESUBSCRIBE_AFTER = Duration.ofSeconds(30);

  @Inject PostboxRuntime postbox;

  @Inject @Any Instance<EventHandler> handlers;

  @Inject Config config;

  @Inject MetricRegistry metrics;

  /**
   * Threads of Postbox's own (with the application's context) for the consumer loops, lanes and
   * deferred workers: long-running work that must not hold the server's shared executor, whose
   * threads also serve HTTP requests.
   */
  @Resource ManagedThreadFactory threadFactory;

  private ExecutorService executor;

  @Resource ManagedScheduledExecutorService scheduler;

  /** One running subscription: what an operator can ask about and act on. */
  public record Running(
      String subscription,
      String destination,
      InboxSettings settings,
      DeadLetters deadLetters,
      DeferredInbox deferred) {}

  private final Map<String, Running> running = new LinkedHashMap<>();
  private final Map<String, ConsumerLoop> loops = new LinkedHashMap<>();
  private final Map<String, Stalls> stalls = new java.util.concurrent.ConcurrentHashMap<>();
  private final Set<String> reportedStuck = java.util.concurrent.ConcurrentHashMap.newKeySet();
  private final List<DeferredInbox> deferredWorkers = new ArrayList<>();
  private final List<CountDownLatch> loopsDone = new ArrayList<>();
  private final List<ScheduledFuture<?>> scheduled = new CopyOnWriteArrayList<>();
  private volatile InboxReadiness.Reading reading =
      new InboxReadiness.Reading(null, "not checked yet", "not checked yet", Map.of(), Map.of());
  private volatile boolean stopped;
  private final Set<String> deadLoops = java.util.concurrent.ConcurrentHashMap.newKeySet();

  void start(@Observes Startup startup) {
    postbox.start(startup); // the broker and data source must be ready first
    executor = Executors.newCachedThreadPool(threadFactory);
    Map<String, Map<String, EventHandler>> bySubscription = new LinkedHashMap<>();
    Map<String, String[]> destinationAndGroup = new HashMap<>();
    for (EventHandler h : handlers) {
      Handles handles = annotation(h);
      if (handles == null) {
        throw new IllegalStateException(
            h.getClass().getName() + " implements EventHandler without @Handles");
      }
      String destination = resolve(handles.destination());
      String group = resolve(handles.group());
      String subscription = destination + "/" + group;
      destinationAndGroup.putIfAbsent(subscription, new String[] {destination, group});
      Map<String, EventHandler> byType =
          bySubscription.computeIfAbsent(subscription, s -> new HashMap<>());
      for (String type : handles.types().length == 0 ? new String[] {"*"} : handles.types()) {
        if (byType.putIfAbsent(type, h) != null) {
          throw new IllegalStateException(
              "two handlers for type '" + type + "' in subscription " + subscription);
        }
      }
    }
    if (bySubscription.isEmpty()) {
      // no inbox: nothing to hold
      reading = new InboxReadiness.Reading(null, null, null, Map.of(), Map.of());
      return;
    }
    for (Map.Entry<String, Map<String, EventHandler>> s : bySubscription.entrySet()) {
      String[] dg = destinationAndGroup.get(s.getKey());
      startSubscription(dg[0], dg[1], s.getValue());
    }
    InboxConfig cfg = postbox.inboxConfig();
    InboxRetention retention =
        new InboxRetention(postbox.transactions(), postbox.dialect(), Clock.systemUTC());
    scheduled.add(
        scheduler.scheduleWithFixedDelay(
            () -> purge(retention, cfg), 1, 10 * 60, TimeUnit.SECONDS));
    if (cfg.redriveDelay() != null) {
      long every = Math.max(1, cfg.redriveDelay().toSeconds() / 4);
      scheduled.add(
          scheduler.scheduleWithFixedDelay(() -> redrive(cfg), every, every, TimeUnit.SECONDS));
    }
    scheduled.add(scheduler.scheduleWithFixedDelay(this::refreshReading, 0, 5, TimeUnit.SECONDS));
  }

  private void startSubscription(
      String destination, String group, Map<String, EventHandler> byType) {
    Set<String> types = new HashSet<>(byType.keySet());
    if (types.contains("*")) {
      types = Set.of();
    }
    InboxConfig cfg = postbox.inboxConfig();
    InboxSettings configured = cfg.settingsFor(destination, group, types);
    java.time.Duration maxNack = postbox.broker().capabilities().maxNackDelay();
    InboxSettings settings = configured.withNackDelayAtMost(maxNack);
    if (settings != configured) {
      LOG.log(
          Level.WARNING,
          "inbox "
              + configured.subscription()
              + ": retry delays above the broker's longest nack delay ("
              + maxNack
              + ") are cut to it; postbox.inbox.max-delay asked for "
              + configured.retry().maxDelay());
    }
    String subscription = settings.subscription();
    Counting counting = new Counting(subscription);
    InboxHandler handler =
        (connection, event) -> {
          long started = System.nanoTime();
          try {
            TraceContext.handling(event, () -> handlerFor(byType, event).handle(event));
          } finally {
            counting.handlerTime.update(Duration.ofNanos(System.nanoTime() - started));
          }
        };
    InboxListener listener = counting;
    DeferredInbox deferred = null;
    if (settings.deferred()) {
      deferred =
          new DeferredInbox(
              postbox.transactions(),
              postbox.dialect(),
              settings,
              handler,
              Clock.systemUTC(),
              counting);
      deferred.start(executor);
      deferredWorkers.add(deferred);
      listener = counting.waking(deferred);
    }
    InboxProcessor inbox =
        new InboxProcessor(
            postbox.transactions(),
            postbox.dialect(),
            settings,
            handler,
            Clock.systemUTC(),
            listener,
            settings.workers() > 1 && !settings.deferred() ? executor : null);
    warnIfTheWindowIsShort(destination, cfg.dedupWindow());
    dev.postbox.runtime.dedup.DedupFront front = inbox.front();
    if (front != null) {
      Tag tag = new Tag("subscription", subscription);
      metrics.gauge("postbox.inbox.front.ids", front::size, tag);
      metrics.gauge("postbox.inbox.front.size.evictions.total", front::sizeEvictions, tag);
    }
    Subscription brokerSubscription =
        Subscription.of(destination, group).withMember(postbox.memberName());
    ConsumerLoop loop =
        new ConsumerLoop(
            subscription,
            postbox.broker().subscribe(brokerSubscription),
            () -> postbox.broker().subscribe(brokerSubscription),
            inbox::process,
            RESUBSCRIBE_AFTER,
            Duration.ofSeconds(1),
            System::nanoTime);
    // A delivery nacked for the longest retry delay comes back after it: still the same stall.
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
    stalls.put(subscription, watch);
    metrics.gauge(
        "postbox.inbox.stuck.seconds",
        () -> watch.stuckFor().map(Duration::toSeconds).orElse(0L),
        new Tag("subscription", subscription));
    loops.put(subscription, loop);
    running.put(
        subscription,
        new Running(
            subscription,
            destination,
            settings,
            new DeadLetters(
                postbox.transactions(),
                postbox.dialect(),
                subscription,
                handler,
                Clock.systemUTC(),
                cfg.dedupWindow()),
            deferred));
    CountDownLatch done = new CountDownLatch(1);
    loopsDone.add(done);
    executor.execute(() -> consume(subscription, loop, done));
    LOG.log(
        Level.INFO,
        "Postbox inbox consuming "
            + subscription
            + (settings.deferred() ? " (deferred, " : " (inline, ")
            + settings.workers()
            + " workers) for types "
            + (types.isEmpty() ? "(all)" : types));
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

  /** Subscriptions whose consumer loop ended while the application was running. */
  public Set<String> deadLoops() {
    return Set.copyOf(deadLoops);
  }

  private void warnIfTheWindowIsShort(String destination, Duration window) {
    try {
      InboxConfig.horizonWarning(
              destination, window, postbox.broker().redeliveryHorizon(destination))
          .ifPresent(w -> LOG.log(Level.WARNING, w));
    } catch (RuntimeException e) {
      LOG.log(
          Level.INFO,
          "could not read the broker's redelivery horizon for " + destination + ": " + e);
    }
  }

  /** Durable counts, e.g. duplicates rejected over all restarts. */
  public dev.postbox.runtime.inbox.InboxCounters counters() {
    return new dev.postbox.runtime.inbox.InboxCounters(postbox.transactions(), postbox.dialect());
  }

  /** The running subscriptions, by name. */
  public Map<String, Running> subscriptions() {
    return java.util.Collections.unmodifiableMap(running);
  }

  /** A running subscription, or empty if there is none by that name. */
  public Optional<Running> subscription(String name) {
    return Optional.ofNullable(running.get(name));
  }

  InboxReadiness.Reading reading() {
    return reading;
  }

  /** Broker ping and a database round trip, every few seconds, for readiness. */
  private void refreshReading() {
    Boolean brokerUp;
    String brokerError = null;
    try {
      postbox.broker().ping(Duration.ofSeconds(3));
      brokerUp = true;
    } catch (UnsupportedOperationException cannotTell) {
      brokerUp = null;
    } catch (RuntimeException e) {
      brokerUp = false;
      brokerError = e.getMessage();
    }
    String dbError = null;
    Map<String, Long> depths = new LinkedHashMap<>();
    try {
      for (Running r : running.values()) {
        if (r.deferred() != null) {
          depths.put(r.subscription(), r.deferred().depth());
        }
      }
      if (depths.isEmpty()) {
        postbox.transactions().inTransaction(c -> c.isValid(3));
      }
    } catch (RuntimeException e) {
      dbError = e.toString();
    }
    Map<String, String> failingLoops = new LinkedHashMap<>();
    loops.forEach(
        (subscription, loop) ->
            loop.failingFor()
                .filter(d -> d.compareTo(RESUBSCRIBE_AFTER) >= 0)
                .ifPresent(
                    d ->
                        failingLoops.put(
                            subscription,
                            "failing for " + d.toSeconds() + " s: " + loop.lastError())));
    Duration stuckAfter = postbox.inboxConfig().stuckAfter();
    stalls.forEach(
        (subscription, watch) -> {
          java.util.Optional<Duration> stuck =
              watch.stuckFor().filter(d -> d.compareTo(stuckAfter) >= 0);
          if (stuck.isPresent()) {
            failingLoops.put(
                subscription,
                "stuck for "
                    + stuck.get().toSeconds()
                    + " s: a delivery has been neither acknowledged nor dead-lettered (see"
                    + " postbox.inbox.stuck-after)");
            if (reportedStuck.add(subscription)) {
              LOG.log(
                  Level.WARNING,
                  "Postbox inbox subscription "
                      + subscription
                      + " is stuck: a delivery has waited "
                      + stuck.get().toSeconds()
                      + " s without being acknowledged or dead-lettered (retried or redelivered"
                      + " over and over); readiness is DOWN until it moves");
            }
          } else if (reportedStuck.remove(subscription)) {
            LOG.log(Level.INFO, "Postbox inbox subscription " + subscription + " moves again");
          }
        });
    reading =
        new InboxReadiness.Reading(
            brokerUp,
            brokerError,
            dbError,
            java.util.Collections.unmodifiableMap(depths),
            java.util.Collections.unmodifiableMap(failingLoops));
  }

  private void purge(InboxRetention retention, InboxConfig cfg) {
    try {
      int deleted = retention.purge(cfg.dedupWindow(), cfg.retentionBatch());
      if (deleted > 0) {
        LOG.log(Level.INFO, "inbox retention deleted " + deleted + " rows past the dedup window");
      }
    } catch (RuntimeException e) {
      LOG.log(Level.WARNING, "inbox retention failed; next run retries: " + e);
    }
  }

  private void redrive(InboxConfig cfg) {
    for (Running r : running.values()) {
      try {
        int replayed = r.deadLetters().redrive(cfg.redriveDelay(), cfg.redriveMaxTimes(), 100);
        if (replayed > 0) {
          LOG.log(Level.INFO, "re-drove " + replayed + " dead letters of " + r.subscription());
        }
      } catch (RuntimeException e) {
        LOG.log(Level.WARNING, "dead-letter re-drive of " + r.subscription() + " failed: " + e);
      }
    }
  }

  /** {@code ${key}} takes the value from MicroProfile Config; anything else is literal. */
  private String resolve(String value) {
    if (value.startsWith("${") && value.endsWith("}")) {
      return config.getValue(value.substring(2, value.length() - 1), String.class);
    }
    return value;
  }

  /** MicroProfile metrics per subscription. */
  private final class Counting implements InboxListener {
    private final Counter processed;
    private final Counter received;
    private final Counter duplicates;
    private final Counter conflicts;
    private final Counter retries;
    private final Counter deadLetters;
    final Timer handlerTime;

    Counting(String subscription) {
      Tag tag = new Tag("subscription", subscription);
      processed = metrics.counter("postbox.inbox.processed", tag);
      received = metrics.counter("postbox.inbox.received", tag);
      duplicates = metrics.counter("postbox.inbox.duplicates", tag);
      conflicts = metrics.counter("postbox.inbox.conflicts", tag);
      retries = metrics.counter("postbox.inbox.retries", tag);
      deadLetters = metrics.counter("postbox.inbox.dead.letters", tag);
      handlerTime = metrics.timer("postbox.inbox.handler", tag);
    }

    /** Also wakes the deferred workers when events are queued. */
    InboxListener waking(DeferredInbox workers) {
      Counting counts = this;
      return new InboxListener() {
        @Override
        public void processed(String subscription, Envelope event) {
          counts.processed(subscription, event);
        }

        @Override
        public void received(String subscription, Envelope event) {
          counts.received(subscription, event);
          workers.wake();
        }

        @Override
        public void duplicate(String subscription, Envelope event) {
          counts.duplicate(subscription, event);
        }

        @Override
        public void retried(String subscription, Envelope event, int attempts) {
          counts.retried(subscription, event, attempts);
        }

        @Override
        public void deadLettered(String subscription, DeadLetterReason reason) {
          counts.deadLettered(subscription, reason);
        }
      };
    }

    @Override
    public void processed(String subscription, Envelope event) {
      processed.inc();
    }

    @Override
    public void received(String subscription, Envelope event) {
      received.inc();
    }

    @Override
    public void duplicate(String subscription, Envelope event) {
      duplicates.inc();
    }

    @Override
    public void retried(String subscription, Envelope event, int attempts) {
      retries.inc();
    }

    @Override
    public void deadLettered(String subscription, DeadLetterReason reason) {
      deadLetters.inc();
      if (reason == DeadLetterReason.CONFLICT) {
        conflicts.inc();
      }
    }
  }

  private static EventHandler handlerFor(Map<String, EventHandler> byType, Envelope event) {
    EventHandler h = byType.get(event.type());
    if (h == null) {
      h = byType.get("*");
    }
    if (h == null) {
      // Deliveries of unknown types are dead-lettered before this; a replay of one lands here.
      throw new UnprocessableEventException(
          DeadLetterReason.UNKNOWN_TYPE, "no handler for type '" + event.type() + "'", null);
    }
    return h;
  }

  private static Handles annotation(EventHandler h) {
    for (Class<?> c = h.getClass(); c != null && c != Object.class; c = c.getSuperclass()) {
      Handles a = c.getAnnotation(Handles.class);
      if (a != null) {
        return a; // CDI proxies subclass the bean class
      }
    }
    return null;
  }

  void stop(@Observes Shutdown shutdown) {
    stopped = true;
    scheduled.forEach(f -> f.cancel(false));
    loops.values().forEach(ConsumerLoop::close);
    deferredWorkers.forEach(DeferredInbox::close);
    for (CountDownLatch done : loopsDone) {
      try {
        done.await(30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    if (executor != null) {
      executor.shutdown();
    }
  }
}
