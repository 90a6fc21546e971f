package dev.postbox.runtime.jakarta;

import dev.postbox.runtime.inbox.InboxListener;
import dev.postbox.runtime.inbox.InboxProcessor;
import dev.postbox.runtime.inbox.InboxSettings;
import dev.postbox.spi.Consumer;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.Subscription;
import jakarta.annotation.Resource;
import jakarta.enterprise.concurrent.ManagedExecutorService;
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
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Runs one consumer loop per inbox subscription (destination + group) found among the {@link
 * EventHandler} beans, on the server's managed executor, each delivery batch through the inbox
 * engine in JTA transactions.
 */
@ApplicationScoped
public class InboxRuntime {

  private static final System.Logger LOG = System.getLogger(InboxRuntime.class.getName());

  @Inject PostboxRuntime postbox;

  @Inject @Any Instance<EventHandler> handlers;

  @Inject org.eclipse.microprofile.config.Config config;

  @Inject org.eclipse.microprofile.metrics.MetricRegistry metrics;

  @Resource ManagedExecutorService executor;

  private final List<Consumer> consumers = new ArrayList<>();
  private final List<CountDownLatch> loopsDone = new ArrayList<>();
  private volatile boolean stopped;

  void start(@Observes Startup startup) {
    postbox.start(startup); // the broker and data source must be ready first
    Map<String, Map<String, EventHandler>> bySubscription = new HashMap<>();
    Map<String, Handles> declared = new HashMap<>();
    for (EventHandler h : handlers) {
      Handles handles = annotation(h);
      if (handles == null) {
        throw new IllegalStateException(
            h.getClass().getName() + " implements EventHandler without @Handles");
      }
      String subscription = resolve(handles.destination()) + "/" + resolve(handles.group());
      declared.putIfAbsent(subscription, handles);
      Map<String, EventHandler> byType =
          bySubscription.computeIfAbsent(subscription, s -> new HashMap<>());
      for (String type : handles.types().length == 0 ? new String[] {"*"} : handles.types()) {
        if (byType.putIfAbsent(type, h) != null) {
          throw new IllegalStateException(
              "two handlers for type '" + type + "' in subscription " + subscription);
        }
      }
    }
    for (Map.Entry<String, Map<String, EventHandler>> s : bySubscription.entrySet()) {
      startLoop(s.getKey(), declared.get(s.getKey()), s.getValue());
    }
  }

  private void startLoop(String subscription, Handles handles, Map<String, EventHandler> byType) {
    Set<String> types = new HashSet<>(byType.keySet());
    if (types.contains("*")) {
      types = Set.of();
    }
    InboxSettings settings = InboxSettings.of(subscription).withTypes(types);
    InboxProcessor inbox =
        new InboxProcessor(
            postbox.transactions(),
            postbox.dialect(),
            settings,
            (connection, event) -> handlerFor(byType, event).handle(event),
            Clock.systemUTC(),
            new Counting(subscription),
            null);
    Consumer consumer =
        postbox
            .broker()
            .subscribe(Subscription.of(resolve(handles.destination()), resolve(handles.group())));
    consumers.add(consumer);
    CountDownLatch done = new CountDownLatch(1);
    loopsDone.add(done);
    executor.execute(
        () -> {
          try {
            while (!stopped) {
              try {
                inbox.process(consumer.poll(500, Duration.ofMillis(200)));
              } catch (IllegalStateException closed) {
                if (!stopped) {
                  throw closed;
                }
              } catch (RuntimeException e) {
                // A broker or database hiccup: back off, then poll again; unacked work comes back.
                LOG.log(Level.WARNING, "inbox loop of " + subscription + " failed; retrying: " + e);
                java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.SECONDS.toNanos(1));
              }
            }
          } finally {
            done.countDown();
          }
        });
    LOG.log(
        Level.INFO,
        "Postbox inbox consuming "
            + subscription
            + " for types "
            + (types.isEmpty() ? "(all)" : types));
  }

  /** {@code ${key}} takes the value from MicroProfile Config; anything else is literal. */
  private String resolve(String value) {
    if (value.startsWith("${") && value.endsWith("}")) {
      return config.getValue(value.substring(2, value.length() - 1), String.class);
    }
    return value;
  }

  /** MicroProfile counters per subscription: processed, duplicates, retries, dead letters. */
  private final class Counting implements InboxListener {
    private final org.eclipse.microprofile.metrics.Counter processed;
    private final org.eclipse.microprofile.metrics.Counter duplicates;
    private final org.eclipse.microprofile.metrics.Counter retries;
    private final org.eclipse.microprofile.metrics.Counter deadLetters;

    Counting(String subscription) {
      org.eclipse.microprofile.metrics.Tag tag =
          new org.eclipse.microprofile.metrics.Tag("subscription", subscription);
      processed = metrics.counter("postbox.inbox.processed", tag);
      duplicates = metrics.counter("postbox.inbox.duplicates", tag);
      retries = metrics.counter("postbox.inbox.retries", tag);
      deadLetters = metrics.counter("postbox.inbox.dead.letters", tag);
    }

    @Override
    public void processed(String subscription, Envelope event) {
      processed.inc();
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
    public void deadLettered(
        String subscription, dev.postbox.runtime.inbox.DeadLetterReason reason) {
      deadLetters.inc();
    }
  }

  private static EventHandler handlerFor(Map<String, EventHandler> byType, Envelope event) {
    EventHandler h = byType.get(event.type());
    return h != null ? h : byType.get("*");
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
    consumers.forEach(Consumer::close);
    for (CountDownLatch done : loopsDone) {
      try {
        done.await(30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
