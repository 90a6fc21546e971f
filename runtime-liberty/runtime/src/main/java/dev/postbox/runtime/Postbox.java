package dev.postbox.runtime;

import dev.postbox.runtime.api.InboxOperations;
import dev.postbox.runtime.api.OutboxEvent;
import dev.postbox.runtime.api.OutboxOperations;
import dev.postbox.runtime.db.DataAccessException;
import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Durability;
import dev.postbox.runtime.db.Migrations;
import dev.postbox.runtime.db.Transactions;
import dev.postbox.runtime.idempotency.IdempotencyKeys;
import dev.postbox.runtime.inbox.InboxEngine;
import dev.postbox.runtime.outbox.OutboxRepository;
import dev.postbox.runtime.outbox.Partitioner;
import dev.postbox.runtime.relay.OutboxEngine;
import dev.postbox.runtime.retention.DatePartitions;
import dev.postbox.spi.Broker;
import dev.postbox.spi.Brokers;
import dev.postbox.spi.InvalidEventException;
import java.lang.System.Logger.Level;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;

/**
 * A running Postbox: the outbox relay and the inbox loops over one database and one broker,
 * assembled by {@link #builder()} in plain Java. A container's wiring (the Jakarta layer in this
 * module) builds one at startup and closes it at shutdown; an application can do the same.
 *
 * <pre>{@code
 * Postbox postbox = Postbox.builder()
 *     .settings(PostboxSettings.parse(Map.of("postbox.broker", "kafka", ...)))
 *     .dataSource(dataSource)
 *     .subscribe(new InboxEngine.Registration("orders", "payments", Set.of(), handler))
 *     .start();
 * ...
 * postbox.close();
 * }</pre>
 */
public final class Postbox implements AutoCloseable {

  private static final System.Logger LOG = System.getLogger(Postbox.class.getName());

  private static final Object PARTITIONS_KEY = Postbox.class.getName() + ".partitions";
  private static final Object DUE_KEY = Postbox.class.getName() + ".due";

  private final PostboxSettings settings;
  private final DataSource dataSource;
  private final Transactions tx;
  private Clock clock; // set at start: the database's, unless the builder gave one
  private final ScheduledExecutorService scheduler;
  private final boolean ownScheduler;
  private final List<ScheduledFuture<?>> scheduled = new ArrayList<>();
  private Dialect dialect;
  private Durability durability;
  private IdempotencyKeys idempotencyKeys;
  private Broker broker;
  private boolean ownBroker;
  private OutboxEngine outbox;
  private InboxEngine inbox;

  Postbox(PostboxBuilder b) {
    this.settings = Objects.requireNonNull(b.settings, "settings");
    this.dataSource = Objects.requireNonNull(b.dataSource, "dataSource");
    this.tx = b.transactions != null ? b.transactions : Transactions.jdbc(dataSource);
    this.clock = b.clock;
    this.ownScheduler = b.scheduler == null;
    this.scheduler =
        ownScheduler ? Executors.newScheduledThreadPool(2, b.threadFactory) : b.scheduler;
  }

  /** Starts assembling a Postbox. */
  public static PostboxBuilder builder() {
    return new PostboxBuilder();
  }

  void start(PostboxBuilder b) {
    dialect = settings.migrate() ? Migrations.migrate(dataSource) : Migrations.dialect(dataSource);
    if (clock == null) {
      dev.postbox.runtime.db.DatabaseClock databaseClock =
          dev.postbox.runtime.db.DatabaseClock.of(Clock.systemUTC(), dataSource, dialect);
      clock = databaseClock;
      scheduled.add(
          scheduler.scheduleWithFixedDelay(databaseClock::refresh, 60, 60, TimeUnit.SECONDS));
    }
    if (settings.datePartitions() != null) {
      if (settings.migrate()) {
        Migrations.partitionByDate(dataSource); // names PostgreSQL on any other database
      } else if (!tx.inTransaction(
          c -> DatePartitions.isPartitioned(c, dialect, DatePartitions.Table.INBOX))) {
        throw new IllegalStateException(
            "postbox.date-partitions=true, but the outbox and inbox are not date-partitioned"
                + " (PostgreSQL only): start once with postbox.migrate=true, or apply"
                + " db/postbox/postgresql-date-partitions/V1__date_partitions.sql yourself");
      }
      DatePartitions.setInterval(tx, settings.datePartitions());
    }
    durability = Durability.check(dataSource, dialect, settings.acceptUnsafeDurability());
    settings.checkPoolSize();
    idempotencyKeys = new IdempotencyKeys(tx, dialect, settings.idempotency().inFlightTimeout());
    scheduled.add(
        scheduler.scheduleWithFixedDelay(this::purgeIdempotencyKeys, 1, 60, TimeUnit.SECONDS));
    if (b.broker != null) {
      broker = b.broker;
    } else if (!"none".equals(settings.brokerName())) {
      broker = Brokers.open(settings.brokerName(), settings.brokerConfig());
      ownBroker = true;
    }
    if (!settings.relayEnabled()) {
      LOG.log(
          Level.INFO,
          "Postbox relay disabled (postbox.relay.enabled=false); events are recorded, not published");
    }
    if (broker == null) {
      LOG.log(
          Level.WARNING,
          "postbox.broker=none: Outbox.record checks the event rules only, not the relay's broker"
              + " rules (destination names, sizes); set postbox.broker as the relay's instances do"
              + " (docs/outbox.md)");
    }
    outbox =
        new OutboxEngine(
            tx,
            dialect,
            dataSource,
            settings.relayEnabled() ? broker().publisher() : null,
            settings.relay(),
            settings.outboxRedrive(),
            clock,
            scheduler,
            b.threadFactory,
            b.relayListener);
    if (settings.relayEnabled()) {
      LOG.log(
          Level.INFO,
          "Postbox relay "
              + settings.relay().instanceId()
              + " started with broker "
              + settings.brokerName()
              + ", "
              + settings.relay().partitions()
              + " partitions");
    }
    inbox =
        new InboxEngine(
            tx,
            dialect,
            b.registrations.isEmpty() ? null : broker(),
            settings.memberName(),
            settings.inbox(),
            clock,
            scheduler,
            b.threadFactory,
            b.registrations,
            b.inboxListeners);
  }

  /**
   * Writes the event next to the caller's business rows, in the caller's transaction: it exists if
   * and only if that transaction commits, and is published after the commit.
   *
   * <p>The event is checked first against the configured broker's own rules ({@link
   * dev.postbox.spi.Capabilities#check}: its destination names, its message size, its characters),
   * so an event the relay could not publish is never committed.
   *
   * @return the event id
   * @throws IllegalStateException no transaction is active; nothing is recorded
   * @throws InvalidEventException the broker cannot carry the event; nothing is recorded and the
   *     transaction is marked rollback only
   * @throws DataAccessException the row could not be written; the transaction is marked rollback
   *     only
   */
  public String record(CallerTransaction caller, OutboxEvent event) {
    return record(caller, event, dev.postbox.runtime.api.Schedule.NOW);
  }

  /**
   * As {@link #record(CallerTransaction, OutboxEvent)}, published at the schedule's due time and
   * never after its expiry (see {@link dev.postbox.runtime.api.Outbox#record(OutboxEvent,
   * dev.postbox.runtime.api.Schedule)}). A delay counts from the database's clock; the expiry
   * travels with the event as its {@code expirytime} attribute.
   *
   * @throws InvalidEventException the broker cannot carry the event, or it expires before it is
   *     due; nothing is recorded and the transaction is marked rollback only
   */
  public String record(
      CallerTransaction caller, OutboxEvent event, dev.postbox.runtime.api.Schedule schedule) {
    caller.checkActive();
    Objects.requireNonNull(schedule, "schedule");
    Instant now = clock.instant();
    Instant due;
    Instant expiry;
    try {
      due = schedule.dueAt(now);
      expiry = schedule.expiryAt(due);
      dev.postbox.spi.EventRules.checkTime(expiry == null ? due : expiry); // the later of the two
      dev.postbox.spi.EventRules.checkTime(due);
    } catch (java.time.DateTimeException | ArithmeticException | InvalidEventException tooFar) {
      caller.setRollbackOnly();
      throw new InvalidEventException(
          "schedule",
          "must lie within the years 1 to 9999",
          "outbox event " + event.eventId() + ": its due time or expiry is out of range");
    }
    if (expiry != null) {
      expiry = expiry.truncatedTo(java.time.temporal.ChronoUnit.MILLIS);
      if (!expiry.isAfter(due.isAfter(now) ? due : now)) {
        caller.setRollbackOnly();
        throw new InvalidEventException(
            "expiry",
            "must be after the due time",
            "outbox event "
                + event.eventId()
                + " would expire ("
                + expiry
                + ") before it is due ("
                + (due.isAfter(now) ? due : now)
                + "); nothing is recorded");
      }
      event =
          event.toBuilder().header(dev.postbox.spi.Envelope.EXPIRYTIME, expiry.toString()).build();
    }
    check(caller, event);
    OutboxRepository repository = outbox.repository();
    int partition = Partitioner.partition(event.key(), event.eventId(), repository.partitions());
    boolean deferred = due.isAfter(now);
    try (Connection c = caller.connection()) {
      if (deferred) {
        repository.insertScheduled(c, event, now, due, schedule.keepKeyOrder());
      } else {
        repository.insert(c, event, now);
      }
    } catch (SQLException e) {
      // Whatever the caller does with the exception, this transaction must not commit as if the
      // event had been recorded (PostgreSQL would "commit" its aborted transaction silently).
      caller.setRollbackOnly();
      throw new DataAccessException("the outbox row could not be written: " + e.getMessage(), e);
    }
    if (deferred) {
      // After the commit: the relay wakes for it at its due time (or at a poll, on the instance
      // that holds its partition then).
      List<Instant> dues = caller.perTransaction(DUE_KEY, ArrayList::new, outbox::scheduled);
      dues.add(due);
      return event.eventId();
    }
    // After the commit: wake this instance's relay for the partitions it holds, and announce the
    // others to the instances that hold them.
    Set<Integer> touched = caller.perTransaction(PARTITIONS_KEY, HashSet::new, outbox::committed);
    touched.add(partition);
    return event.eventId();
  }

  /**
   * Cancels a scheduled event in the caller's transaction; true when it was still scheduled (see
   * {@link dev.postbox.runtime.api.Outbox#cancel}); a database error marks it rollback only.
   */
  public boolean cancel(CallerTransaction caller, String eventId) {
    caller.checkActive();
    if (eventId == null || eventId.isBlank()) {
      return false;
    }
    try (Connection c = caller.connection()) {
      return new dev.postbox.runtime.outbox.ScheduledRepository(dialect)
          .cancel(c, eventId, clock.instant());
    } catch (SQLException e) {
      caller.setRollbackOnly();
      throw new DataAccessException("the outbox row could not be cancelled: " + e.getMessage(), e);
    }
  }

  /**
   * The configured broker's rules, then the payload limit of this instance's own subscriptions to
   * the destination: what the relay could not publish, or this inbox would dead-letter as
   * OVERSIZED, is refused now, and the caller's transaction is marked rollback only.
   */
  private void check(CallerTransaction caller, OutboxEvent event) {
    try {
      if (broker != null) {
        broker.capabilities().check(event.destination(), event.envelope());
      }
      OptionalInt inboxLimit = inbox.payloadLimit(event.destination());
      if (inboxLimit.isPresent() && event.payloadSize() > inboxLimit.getAsInt()) {
        throw new InvalidEventException(
            "payload",
            "is "
                + event.payloadSize()
                + " bytes, over the max-payload-bytes of this application's inbox for "
                + event.destination()
                + " ("
                + inboxLimit.getAsInt()
                + ")");
      }
    } catch (InvalidEventException refused) {
      caller.setRollbackOnly();
      throw new InvalidEventException(
          refused.field(),
          refused.rule(),
          "outbox event cannot be published"
              + (broker == null ? "" : " by the " + broker.name() + " broker")
              + ": "
              + refused.getMessage());
    }
  }

  /** Lag, FAILED rows, leases, and this instance's relay. */
  public OutboxOperations outboxOperations() {
    return outbox;
  }

  /** The inbox subscriptions running here, and their dead letters. */
  public InboxOperations inbox() {
    return inbox;
  }

  /** The outbox side, with what only a runtime's wiring needs (readiness, metrics). */
  public OutboxEngine outboxEngine() {
    return outbox;
  }

  /** The inbox side, with what only a runtime's wiring needs (readiness, liveness, metrics). */
  public InboxEngine inboxEngine() {
    return inbox;
  }

  public PostboxSettings settings() {
    return settings;
  }

  /** The durability the database's settings give a commit. */
  public Durability durability() {
    return durability;
  }

  /** The idempotency keys of idempotent requests. */
  public IdempotencyKeys idempotencyKeys() {
    return idempotencyKeys;
  }

  public DataSource dataSource() {
    return dataSource;
  }

  /** The broker adapter; fails clearly when none is configured. */
  public Broker broker() {
    if (broker == null) {
      throw new IllegalStateException(
          "postbox.broker is not set: the inbox needs a broker adapter");
    }
    return broker;
  }

  /** Deletes expired idempotency keys, a bounded batch at a time, until none is left. */
  private void purgeIdempotencyKeys() {
    try {
      Instant cutoff = clock.instant().minus(settings.idempotency().retention());
      while (idempotencyKeys.purge(cutoff, 1_000) == 1_000) {
        // next batch
      }
    } catch (RuntimeException e) {
      LOG.log(
          Level.WARNING,
          "Postbox: purging expired idempotency keys failed; next try in a minute",
          e);
    }
  }

  /**
   * Stops in a fixed order: the inbox loops (each finishes its batch), then the relay, then the
   * broker it opened, then its own scheduler.
   */
  @Override
  public synchronized void close() {
    scheduled.forEach(f -> f.cancel(false));
    if (inbox != null) {
      inbox.close();
    }
    if (outbox != null) {
      outbox.close();
    }
    if (broker != null && ownBroker) {
      broker.close();
    }
    if (ownScheduler) {
      scheduler.shutdown();
    }
  }
}
