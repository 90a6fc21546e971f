package dev.postbox.runtime.jakarta;

import dev.postbox.runtime.Postbox;
import dev.postbox.runtime.PostboxSettings;
import dev.postbox.runtime.api.EventHandler;
import dev.postbox.runtime.api.EventTracing;
import dev.postbox.runtime.api.InboxOperations;
import dev.postbox.runtime.api.Outbox;
import dev.postbox.runtime.api.OutboxEvent;
import dev.postbox.runtime.api.OutboxOperations;
import dev.postbox.runtime.api.Schedule;
import dev.postbox.runtime.idempotency.IdempotencyKeys;
import dev.postbox.spi.Broker;
import jakarta.annotation.Resource;
import jakarta.enterprise.concurrent.ManagedScheduledExecutorService;
import jakarta.enterprise.concurrent.ManagedThreadFactory;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.context.ContextNotActiveException;
import jakarta.enterprise.event.Observes;
import jakarta.enterprise.event.Shutdown;
import jakarta.enterprise.event.Startup;
import jakarta.enterprise.inject.Any;
import jakarta.enterprise.inject.Instance;
import jakarta.enterprise.inject.Produces;
import jakarta.inject.Inject;
import jakarta.transaction.TransactionSynchronizationRegistry;
import jakarta.transaction.UserTransaction;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import javax.naming.InitialContext;
import javax.naming.NamingException;
import javax.sql.DataSource;
import org.eclipse.microprofile.config.Config;

/**
 * Starts {@link Postbox} with the application and stops it with the application: reads {@code
 * postbox.*} from MicroProfile Config (a bad value fails the deployment, naming the key), looks the
 * data source up in JNDI, and hands the builder what only the container has: JTA, the managed
 * executors, the {@link EventHandler} beans and the metric registry. Produces the API the
 * application injects: {@link Outbox}, {@link OutboxOperations} and {@link InboxOperations}.
 */
@ApplicationScoped
public class PostboxRuntime {

  @Inject Config config;

  @Inject HandlerBeans handlers;

  @Inject PostboxMetrics metrics;

  @Inject TraceContext trace;

  @Inject @Any Instance<EventTracing> tracers;

  @Resource UserTransaction userTransaction;

  @Resource TransactionSynchronizationRegistry registry;

  @Resource ManagedScheduledExecutorService scheduler;

  /**
   * Threads of Postbox's own (with the application's context) for the relay's workers and the
   * inbox's loops: a broker call that waits for a timeout holds one of them, never a thread of the
   * server's shared executor, which also serves HTTP requests.
   */
  @Resource ManagedThreadFactory threadFactory;

  private volatile Postbox postbox;
  private RuntimeException failure;
  private boolean stopped;

  void start(@Observes Startup startup) {
    postbox();
  }

  /** The running Postbox, started on first use; a start that failed fails every use. */
  Postbox postbox() {
    Postbox running = postbox;
    return running != null ? running : startOnce();
  }

  private synchronized Postbox startOnce() {
    if (failure != null) {
      throw new IllegalStateException("Postbox did not start: " + failure.getMessage(), failure);
    }
    if (postbox == null) {
      if (stopped) {
        throw new IllegalStateException("Postbox has stopped with the application");
      }
      try {
        PostboxSettings settings = parse(config);
        DataSource ds = lookup(settings.dataSource());
        Postbox started =
            Postbox.builder()
                .settings(settings)
                .dataSource(ds)
                .transactions(new JtaTransactions(userTransaction, ds))
                .scheduler(scheduler)
                .threadFactory(threadFactory)
                .inboxListeners(metrics::inboxListener)
                .relayListener(tracing(tracers).relay())
                .subscribeAll(handlers.registrations())
                .start();
        try {
          metrics.register(started);
        } catch (RuntimeException e) {
          started.close();
          throw e;
        }
        postbox = started;
      } catch (RuntimeException e) {
        failure = e;
        throw e;
      }
    }
    return postbox;
  }

  /** The running Postbox, or null before it started (health checks must not start it). */
  Postbox started() {
    return postbox;
  }

  synchronized void stop(@Observes Shutdown shutdown) {
    stopped = true;
    if (postbox != null) {
      postbox.close();
    }
  }

  /** Records in the caller's JTA transaction, with the trace context of the request or event. */
  @Produces
  @ApplicationScoped
  Outbox outbox(JtaCallerTransaction caller) {
    Postbox p = postbox(); // produced at the first call, after the start
    EventTracing tracing = tracing(tracers);
    // The tracer sees the event as the application made it: a traceparent there is its own.
    return new Outbox() {
      @Override
      public String record(OutboxEvent event) {
        return tracing.record(event, e -> p.record(caller, traced(e)));
      }

      @Override
      public String record(OutboxEvent event, Schedule schedule) {
        return tracing.record(event, e -> p.record(caller, traced(e), schedule));
      }

      @Override
      public boolean cancel(String eventId) {
        return p.cancel(caller, eventId);
      }
    };
  }

  /** The application's tracer, or none. */
  static EventTracing tracing(Instance<EventTracing> tracers) {
    if (tracers.isResolvable()) {
      return tracers.get();
    }
    if (!tracers.isUnsatisfied()) {
      System.getLogger(PostboxRuntime.class.getName())
          .log(
              System.Logger.Level.WARNING,
              "more than one EventTracing bean: Postbox makes no spans; keep one");
    }
    return EventTracing.NONE;
  }

  @Produces
  @ApplicationScoped
  OutboxOperations outboxOperations() {
    return postbox().outboxOperations();
  }

  @Produces
  @ApplicationScoped
  InboxOperations inboxOperations() {
    return postbox().inbox();
  }

  /** The broker adapter, for an application that also publishes or consumes on its own. */
  @Produces
  @ApplicationScoped
  Broker broker() {
    return postbox().broker();
  }

  private OutboxEvent traced(OutboxEvent event) {
    OutboxEvent withTrace = TraceContext.fromHandledEvent(event);
    if (withTrace != null) {
      return withTrace;
    }
    try {
      return trace.addTo(event);
    } catch (ContextNotActiveException noRequest) {
      return event; // a thread of the application's own, outside any request
    }
  }

  /** The {@code Idempotency-Key} settings. */
  PostboxSettings.Idempotency idempotency() {
    return postbox().settings().idempotency();
  }

  IdempotencyKeys idempotencyKeys() {
    return postbox().idempotencyKeys();
  }

  DataSource dataSource() {
    return postbox().dataSource();
  }

  private static DataSource lookup(String jndiName) {
    try {
      return (DataSource) new InitialContext().lookup(jndiName);
    } catch (NamingException e) {
      throw new IllegalStateException(
          "postbox.datasource: no data source at '" + jndiName + "'; define it in server.xml", e);
    }
  }

  /**
   * Collects the postbox keys from MicroProfile Config. Known keys are looked up by name, so MP
   * Config's own environment-variable mapping applies ({@code POSTBOX_RETRY_MAX_ATTEMPTS} for
   * {@code postbox.retry.max-attempts}). Other dotted {@code postbox.*} names are taken as they
   * are, so a misspelt key fails. Broker keys may also come as {@code POSTBOX_BROKER_<KEY>}
   * variables, read with {@code _} as {@code .}.
   */
  static PostboxSettings parse(Config config) {
    Map<String, String> raw = new HashMap<>();
    for (String name : config.getPropertyNames()) {
      if (name.startsWith("postbox.")) {
        config.getOptionalValue(name, String.class).ifPresent(v -> raw.put(name, v));
      } else if (name.startsWith("POSTBOX_BROKER_")) {
        String key =
            "postbox.broker." + name.substring(15).toLowerCase(Locale.ROOT).replace('_', '.');
        config.getOptionalValue(name, String.class).ifPresent(v -> raw.putIfAbsent(key, v));
      }
    }
    for (String key : PostboxSettings.ALL_KEYS) {
      if (!raw.containsKey(key)) {
        config.getOptionalValue(key, String.class).ifPresent(v -> raw.put(key, v));
      }
    }
    return PostboxSettings.parse(raw);
  }
}
