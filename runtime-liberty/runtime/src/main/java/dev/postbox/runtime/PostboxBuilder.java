package dev.postbox.runtime;

import dev.postbox.runtime.api.InboxListener;
import dev.postbox.runtime.api.RelayListener;
import dev.postbox.runtime.db.Transactions;
import dev.postbox.runtime.inbox.InboxEngine;
import dev.postbox.runtime.inbox.InboxHandler;
import dev.postbox.spi.Broker;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.function.Function;
import javax.sql.DataSource;

/**
 * What {@link Postbox#builder()} takes; only settings and the data source are required. {@link
 * #start()} assembles and starts the {@link Postbox}.
 */
public final class PostboxBuilder {
  PostboxSettings settings;
  DataSource dataSource;
  Transactions transactions;
  Broker broker;
  Clock clock; // null: the database's clock (db.DatabaseClock)
  ScheduledExecutorService scheduler;
  ThreadFactory threadFactory = Executors.defaultThreadFactory();
  RelayListener relayListener = RelayListener.NONE;
  Function<String, InboxListener> inboxListeners = s -> InboxListener.NONE;
  final List<InboxEngine.Registration> registrations = new ArrayList<>();

  PostboxBuilder() {}

  /** The {@code postbox.*} configuration, see {@link PostboxSettings#parse}. */
  public PostboxBuilder settings(PostboxSettings settings) {
    this.settings = settings;
    return this;
  }

  /** The data source that holds the outbox, the inbox and the application's own tables. */
  public PostboxBuilder dataSource(DataSource dataSource) {
    this.dataSource = dataSource;
    return this;
  }

  /** How Postbox runs its own transactions; local JDBC transactions if not given. */
  public PostboxBuilder transactions(Transactions transactions) {
    this.transactions = transactions;
    return this;
  }

  /**
   * The broker, already open (the caller closes it); if not given, Postbox opens the adapter the
   * settings name ({@code postbox.broker}) and closes it.
   */
  public PostboxBuilder broker(Broker broker) {
    this.broker = broker;
    return this;
  }

  /**
   * The clock for due times, expiries and the relay's "now"; by default the database's ({@code
   * db.DatabaseClock}: this JVM's clock plus the measured offset to the database's), so instances
   * with skewed clocks agree. Tests give a manual one.
   */
  public PostboxBuilder clock(Clock clock) {
    this.clock = Objects.requireNonNull(clock);
    return this;
  }

  /** For timed work (leases, polls, lag, retention); a pool of its own if not given. */
  public PostboxBuilder scheduler(ScheduledExecutorService scheduler) {
    this.scheduler = scheduler;
    return this;
  }

  /** Makes the relay's workers and the inbox's loop and worker threads. */
  public PostboxBuilder threadFactory(ThreadFactory threadFactory) {
    this.threadFactory = Objects.requireNonNull(threadFactory);
    return this;
  }

  /** Hears what the relay does (metrics). */
  public PostboxBuilder relayListener(RelayListener listener) {
    this.relayListener = Objects.requireNonNull(listener);
    return this;
  }

  /** Gives each subscription, by name, a listener that hears what its inbox does (metrics). */
  public PostboxBuilder inboxListeners(Function<String, InboxListener> listeners) {
    this.inboxListeners = Objects.requireNonNull(listeners);
    return this;
  }

  /** Runs an inbox subscription: a consumer loop whose events go to the handler. */
  public PostboxBuilder subscribe(InboxEngine.Registration registration) {
    registrations.add(Objects.requireNonNull(registration));
    return this;
  }

  /** Runs each of the subscriptions. */
  public PostboxBuilder subscribeAll(java.util.Collection<InboxEngine.Registration> all) {
    all.forEach(this::subscribe);
    return this;
  }

  /** Shorthand for {@link #subscribe(InboxEngine.Registration)}; no types takes every type. */
  public PostboxBuilder subscribe(
      String destination, String group, Set<String> types, InboxHandler handler) {
    return subscribe(new InboxEngine.Registration(destination, group, types, handler));
  }

  /**
   * Checks the database, applies the migrations (unless {@code postbox.migrate=false}), opens the
   * broker, and starts the relay and the inbox loops. Whatever fails is closed again before the
   * error is thrown.
   */
  public Postbox start() {
    Postbox p = new Postbox(this);
    try {
      p.start(this);
    } catch (RuntimeException | Error e) {
      try {
        p.close();
      } catch (RuntimeException | Error closing) {
        e.addSuppressed(closing);
      }
      throw e;
    }
    return p;
  }
}
