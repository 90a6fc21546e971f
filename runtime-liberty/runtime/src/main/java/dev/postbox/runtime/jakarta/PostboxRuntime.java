package dev.postbox.runtime.jakarta;

import dev.postbox.runtime.api.BrokerOutage;
import dev.postbox.runtime.api.Lag;
import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Durability;
import dev.postbox.runtime.db.Migrations;
import dev.postbox.runtime.db.Transactions;
import dev.postbox.runtime.idempotency.IdempotencyKeys;
import dev.postbox.runtime.outbox.OutboxRepository;
import dev.postbox.runtime.outbox.OutboxRow;
import dev.postbox.runtime.relay.OutboxAdmin;
import dev.postbox.runtime.relay.OutboxNotifications;
import dev.postbox.runtime.relay.Relay;
import dev.postbox.runtime.relay.RelayListener;
import dev.postbox.runtime.relay.RelaySettings;
import dev.postbox.runtime.relay.RetryPolicy;
import dev.postbox.spi.Broker;
import dev.postbox.spi.BrokerConfig;
import dev.postbox.spi.Brokers;
import jakarta.annotation.Resource;
import jakarta.enterprise.concurrent.ManagedScheduledExecutorService;
import jakarta.enterprise.concurrent.ManagedThreadFactory;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.enterprise.event.Shutdown;
import jakarta.enterprise.event.Startup;
import jakarta.inject.Inject;
import jakarta.transaction.UserTransaction;
import java.lang.System.Logger.Level;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import javax.naming.InitialContext;
import javax.naming.NamingException;
import javax.sql.DataSource;
import org.eclipse.microprofile.config.Config;
import org.eclipse.microprofile.metrics.MetricRegistry;

/**
 * Starts Postbox with the application: reads {@code postbox.*} from MicroProfile Config (a bad
 * value fails the deployment, naming the key), applies the migrations, opens the broker adapter,
 * and runs the relay on the server's managed executors. Stops it with the application.
 */
@ApplicationScoped
public class PostboxRuntime {

  private static final System.Logger LOG = System.getLogger(PostboxRuntime.class.getName());

  @Inject Config config;

  @Inject MetricRegistry metrics;

  @Resource UserTransaction userTransaction;

  @Resource ManagedScheduledExecutorService scheduler;

  /**
   * The relay's own threads (with the application's context), at most {@code postbox.workers}: a
   * broker call that waits for a timeout holds one of them, never a thread of the server's shared
   * executor, which also serves HTTP requests.
   */
  @Resource ManagedThreadFactory threadFactory;

  private java.util.concurrent.ExecutorService workers;

  private volatile Settings settings;
  private volatile Relay relay;
  private volatile Broker broker;
  private volatile Transactions tx;
  private volatile Dialect dialect;
  private volatile Durability durability;
  private volatile DataSource dataSource;
  private final AtomicReference<Lag> lag = new AtomicReference<>();
  private final AtomicReference<String> lagError = new AtomicReference<>("not started");
  private final AtomicLong published = new AtomicLong();
  private final AtomicLong failures = new AtomicLong();
  private final AtomicLong fencedBatches = new AtomicLong();
  private ScheduledFuture<?> lagRefresh;
  private ScheduledFuture<?> idempotencyPurge;
  private ScheduledFuture<?> outboxRedrive;
  private volatile IdempotencyKeys idempotencyKeys;
  private volatile OutboxNotifications notifications;

  /** Postbox's own configuration, parsed once. */
  record Settings(
      boolean relayEnabled,
      boolean migrate,
      String dataSource,
      String brokerName,
      Map<String, String> brokerConfig,
      RelaySettings relay,
      Duration lagThreshold,
      boolean acceptUnsafeDurability,
      Idempotency idempotency,
      InboxConfig inbox,
      Redrive outboxRedrive,
      int poolSize,
      String memberName) {}

  /**
   * The automatic re-drive of FAILED outbox rows.
   *
   * @param delay how long a row stays FAILED before it is sent again; null turns it off
   * @param maxTimes how often one row is re-driven at most
   */
  record Redrive(Duration delay, int maxTimes) {}

  /**
   * The {@code Idempotency-Key} settings.
   *
   * @param inFlightTimeout how long a claimed key holds before a retry may take it over
   * @param retention how long a key and its answer are kept
   * @param maxBodyBytes the largest request body an idempotent method takes
   */
  record Idempotency(Duration inFlightTimeout, Duration retention, int maxBodyBytes) {}

  private boolean started;

  /** Idempotent: the inbox runtime starts it first when it needs the broker. */
  synchronized void start(@Observes Startup startup) {
    if (started) {
      return;
    }
    started = true;
    settings = parse(config);
    DataSource ds = lookup(settings.dataSource());
    dataSource = ds;
    dialect = settings.migrate() ? Migrations.migrate(ds) : Migrations.dialect(ds);
    durability = Durability.check(ds, dialect, settings.acceptUnsafeDurability());
    tx = new JtaTransactions(userTransaction, ds);
    checkPoolSize(settings);
    idempotencyKeys = new IdempotencyKeys(tx, dialect, settings.idempotency().inFlightTimeout());
    idempotencyPurge =
        scheduler.scheduleWithFixedDelay(this::purgeIdempotencyKeys, 1, 60, TimeUnit.SECONDS);
    registerMetrics();
    lagRefresh = scheduler.scheduleWithFixedDelay(this::refreshLag, 0, 2, TimeUnit.SECONDS);
    if (!"none".equals(settings.brokerName())) {
      broker = Brokers.open(settings.brokerName(), settings.brokerConfig());
    }
    if (!settings.relayEnabled()) {
      LOG.log(
          Level.INFO,
          "Postbox relay disabled (postbox.relay.enabled=false); events are recorded, not published");
      return;
    }
    workers =
        java.util.concurrent.Executors.newFixedThreadPool(
            settings.relay().workerThreads(), threadFactory);
    relay =
        new Relay(
            tx,
            dialect,
            broker.publisher(),
            settings.relay(),
            Clock.systemUTC(),
            scheduler,
            workers,
            new Counting());
    relay.start();
    if (dialect.canAnnounce()) {
      notifications = new OutboxNotifications(dataSource, relay::wake, threadFactory);
      notifications.start();
    }
    Redrive redrive = settings.outboxRedrive();
    if (redrive.delay() != null) {
      long every = Math.max(1, redrive.delay().toSeconds() / 4);
      outboxRedrive =
          scheduler.scheduleWithFixedDelay(
              () -> redriveOutbox(redrive), every, every, TimeUnit.SECONDS);
    }
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

  void stop(@Observes Shutdown shutdown) {
    if (lagRefresh != null) {
      lagRefresh.cancel(false);
    }
    if (idempotencyPurge != null) {
      idempotencyPurge.cancel(false);
    }
    if (outboxRedrive != null) {
      outboxRedrive.cancel(false);
    }
    if (notifications != null) {
      notifications.close();
    }
    if (relay != null) {
      relay.close();
    }
    if (workers != null) {
      workers.shutdown();
    }
    if (broker != null) {
      broker.close();
    }
  }

  /**
   * Refuses a relay that could take every pooled connection: its workers each hold one connection
   * (briefly, never during a broker call), and the application's requests need the rest.
   *
   * <p>A Jakarta EE application cannot read its data source's pool size, so {@code
   * postbox.datasource.max-pool-size} states it (Liberty's default {@code maxPoolSize} is 50);
   * server.xml can set both from one variable, as the payments server does.
   */
  static void checkPoolSize(Settings s) {
    if (!s.relayEnabled()) {
      return;
    }
    int pool = s.poolSize();
    int workers = s.relay().workerThreads();
    String source = "postbox.datasource.max-pool-size is " + pool;
    if (workers >= pool) {
      throw new IllegalStateException(
          "postbox.workers="
              + workers
              + " is not below the connection pool: "
              + source
              + ". The relay would take every connection and requests would wait for one; lower"
              + " postbox.workers or raise the pool's maxPoolSize.");
    }
    LOG.log(Level.INFO, "Postbox relay: at most " + workers + " batches at once; " + source);
  }

  private void redriveOutbox(Redrive redrive) {
    try {
      int n = admin().redrive(redrive.delay(), redrive.maxTimes());
      if (n > 0) {
        LOG.log(Level.INFO, "re-drove " + n + " FAILED outbox rows");
      }
    } catch (RuntimeException e) {
      LOG.log(Level.WARNING, "outbox re-drive failed; next run retries: " + e);
    }
  }

  /** The durability the database's settings give a commit; null before the start. */
  public Durability durability() {
    return durability;
  }

  /** Called after a commit that recorded events in this partition. */
  /**
   * After a commit that recorded events in these partitions: wakes this instance's relay for the
   * ones it holds and announces the rest to the other instances (PostgreSQL), whose relays would
   * otherwise find them at their next poll.
   */
  void committed(java.util.Set<Integer> partitions) {
    Relay r = relay;
    if (r == null) {
      return;
    }
    java.util.List<Integer> elsewhere = new java.util.ArrayList<>();
    java.util.Set<Integer> held = r.ownedPartitions();
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

  int partitions() {
    return settings.relay().partitions();
  }

  /** The application's JTA data source that holds the outbox. */
  DataSource dataSource() {
    return dataSource;
  }

  /** The {@code Idempotency-Key} settings. */
  Idempotency idempotency() {
    return settings.idempotency();
  }

  /** The idempotency keys of {@link Idempotent} methods. */
  IdempotencyKeys idempotencyKeys() {
    return idempotencyKeys;
  }

  /** Deletes expired idempotency keys, a bounded batch at a time, until none is left. */
  private void purgeIdempotencyKeys() {
    try {
      Instant cutoff = Instant.now().minus(settings.idempotency().retention());
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

  /** The outbox's SQL for this database. */
  OutboxRepository repository() {
    return new OutboxRepository(dialect, settings.relay().partitions());
  }

  /** The operator's API: lag, failed rows, retry, discard. */
  public OutboxAdmin admin() {
    return OutboxAdmin.create(tx, dialect, settings.relay().partitions());
  }

  Transactions transactions() {
    return tx;
  }

  Dialect dialect() {
    return dialect;
  }

  /** The broker adapter; fails clearly when none is configured. */
  /**
   * This instance's name across restarts ({@code postbox.member-name}), under which its consumers
   * join their groups.
   */
  public String memberName() {
    return settings.memberName();
  }

  public Broker broker() {
    if (broker == null) {
      throw new IllegalStateException(
          "postbox.broker is not set: the inbox needs a broker adapter");
    }
    return broker;
  }

  /** The relay, or null when disabled; for leases and counts. */
  public Relay relay() {
    return relay;
  }

  /** The destinations the broker does not serve now, as this instance's relay sees them. */
  List<BrokerOutage> brokerOutages() {
    Relay r = relay;
    return r == null ? List.of() : r.brokerOutages();
  }

  /** The last lag reading, or null before the first; see {@link #lagError()}. */
  public Lag lag() {
    return lag.get();
  }

  /** Why the last lag reading failed, or null if it succeeded. */
  public String lagError() {
    return lagError.get();
  }

  InboxConfig inboxConfig() {
    return settings.inbox();
  }

  Duration lagThreshold() {
    return settings.lagThreshold();
  }

  private void refreshLag() {
    try {
      lag.set(
          tx.inTransaction(
              c -> new OutboxRepository(dialect, settings.relay().partitions()).lag(c)));
      lagError.set(null);
    } catch (RuntimeException e) {
      lagError.set(e.toString());
    }
  }

  private void registerMetrics() {
    metrics.gauge("postbox.outbox.pending", () -> lag.get() == null ? 0L : lag.get().pending());
    metrics.gauge("postbox.outbox.failed", () -> lag.get() == null ? 0L : lag.get().failed());
    metrics.gauge("postbox.outbox.oldest.pending.age.seconds", this::oldestPendingAgeSeconds);
    metrics.gauge("postbox.outbox.published.total", published::get);
    metrics.gauge("postbox.outbox.publish.failures.total", failures::get);
    metrics.gauge("postbox.outbox.fenced.batches.total", fencedBatches::get);
    // Apart from lag: whether the broker takes this instance's events, and for how long it has not.
    metrics.gauge("postbox.outbox.broker.available", () -> brokerOutages().isEmpty() ? 1L : 0L);
    metrics.gauge(
        "postbox.outbox.broker.unavailable.seconds",
        () ->
            brokerOutages().stream()
                .map(o -> Duration.between(o.since(), Instant.now()).toSeconds())
                .max(Long::compare)
                .orElse(0L));
  }

  double oldestPendingAgeSeconds() {
    Lag l = lag.get();
    if (l == null || l.oldestPending() == null) {
      return 0;
    }
    // Not clamped at 0: a row from the future is a clock or time-zone fault, and must show.
    return Duration.between(l.oldestPending(), Instant.now()).toMillis() / 1000.0;
  }

  private final class Counting implements RelayListener {
    @Override
    public void published(List<OutboxRow> rows, Instant committedAt) {
      published.addAndGet(rows.size());
    }

    @Override
    public void failed(OutboxRow row, String error, boolean parked) {
      failures.incrementAndGet();
    }

    @Override
    public void fenced(int partition, List<OutboxRow> rows) {
      fencedBatches.incrementAndGet();
    }
  }

  private static DataSource lookup(String jndiName) {
    try {
      return (DataSource) new InitialContext().lookup(jndiName);
    } catch (NamingException e) {
      throw new IllegalStateException(
          "postbox.datasource: no data source at '" + jndiName + "'; define it in server.xml", e);
    }
  }

  /** Reads and validates every {@code postbox.*} key; unknown keys fail, naming the key. */
  /** Every postbox key besides the broker's pass-through keys. */
  static final List<String> KEYS =
      List.of(
          "postbox.relay.enabled",
          "postbox.broker",
          "postbox.retry.max-attempts",
          "postbox.retry.initial-delay",
          "postbox.retry.max-delay",
          "postbox.instance-id",
          "postbox.member-name",
          "postbox.partitions",
          "postbox.batch-size",
          "postbox.lease",
          "postbox.poll-interval",
          "postbox.workers",
          "postbox.delete-on-dispatch",
          "postbox.retention",
          "postbox.retention.batch",
          "postbox.migrate",
          "postbox.datasource",
          "postbox.lag.threshold",
          "postbox.durability.accept-unsafe",
          "postbox.idempotency.in-flight-timeout",
          "postbox.idempotency.retention",
          "postbox.idempotency.max-body-bytes",
          "postbox.retry.outage-probe-interval",
          "postbox.outbox.redrive.delay",
          "postbox.outbox.redrive.max-times",
          "postbox.datasource.max-pool-size");

  /** Every key the parser knows. */
  static final List<String> ALL_KEYS =
      java.util.stream.Stream.concat(KEYS.stream(), InboxConfig.KEYS.stream()).toList();

  /**
   * Collects the postbox keys from MicroProfile Config. Known keys are looked up by name, so MP
   * Config's own environment-variable mapping applies ({@code POSTBOX_RETRY_MAX_ATTEMPTS} for
   * {@code postbox.retry.max-attempts}). Other dotted {@code postbox.*} names are taken as they
   * are, so a misspelt key fails. Broker keys may also come as {@code POSTBOX_BROKER_<KEY>}
   * variables, read with {@code _} as {@code .}.
   */
  static Settings parse(Config config) {
    Map<String, String> raw = new HashMap<>();
    for (String name : config.getPropertyNames()) {
      if (name.startsWith("postbox.")) {
        config.getOptionalValue(name, String.class).ifPresent(v -> raw.put(name, v));
      } else if (name.startsWith("POSTBOX_BROKER_")) {
        String key =
            "postbox.broker."
                + name.substring(15).toLowerCase(java.util.Locale.ROOT).replace('_', '.');
        config.getOptionalValue(name, String.class).ifPresent(v -> raw.putIfAbsent(key, v));
      }
    }
    for (String key : ALL_KEYS) {
      if (!raw.containsKey(key)) {
        config.getOptionalValue(key, String.class).ifPresent(v -> raw.put(key, v));
      }
    }
    return parse(raw);
  }

  static Settings parse(Map<String, String> raw) {
    BrokerConfig c = BrokerConfig.of("postbox", raw);
    boolean enabled = c.bool("postbox.relay.enabled", true);
    String brokerName = enabled ? c.required("postbox.broker") : c.string("postbox.broker", "none");
    Map<String, String> brokerConfig = c.withPrefix("postbox.broker.");
    RetryPolicy retry =
        new RetryPolicy(
            c.integer("postbox.retry.max-attempts", 10, 1, 1_000),
            c.duration(
                "postbox.retry.initial-delay",
                Duration.ofSeconds(1),
                Duration.ZERO,
                Duration.ofHours(1)),
            c.duration(
                "postbox.retry.max-delay",
                Duration.ofMinutes(5),
                Duration.ZERO,
                Duration.ofDays(1)),
            0.2);
    RelaySettings relay =
        new RelaySettings(
            c.string("postbox.instance-id", defaultInstanceId()),
            c.integer("postbox.partitions", 64, 1, 4096),
            c.integer("postbox.batch-size", 500, 1, 10_000),
            c.duration(
                "postbox.lease",
                Duration.ofSeconds(30),
                Duration.ofSeconds(1),
                Duration.ofHours(1)),
            c.duration(
                "postbox.poll-interval",
                Duration.ofMillis(500),
                Duration.ofMillis(10),
                Duration.ofMinutes(10)),
            c.integer("postbox.workers", 4, 1, 256),
            c.bool("postbox.delete-on-dispatch", false),
            retry,
            c.duration(
                "postbox.retention", Duration.ofDays(7), Duration.ZERO, Duration.ofDays(3650)),
            c.integer("postbox.retention.batch", 1_000, 1, 100_000),
            c.duration(
                "postbox.retry.outage-probe-interval",
                Duration.ofSeconds(10),
                Duration.ofMillis(10),
                Duration.ofHours(1)));
    Settings s =
        new Settings(
            enabled,
            c.bool("postbox.migrate", true),
            c.string("postbox.datasource", "jdbc/postbox"),
            brokerName,
            brokerConfig,
            relay,
            c.duration(
                "postbox.lag.threshold",
                Duration.ofMinutes(1),
                Duration.ofSeconds(1),
                Duration.ofDays(1)),
            c.bool("postbox.durability.accept-unsafe", false),
            new Idempotency(
                c.duration(
                    "postbox.idempotency.in-flight-timeout",
                    Duration.ofSeconds(30),
                    Duration.ofSeconds(1),
                    Duration.ofHours(1)),
                c.duration(
                    "postbox.idempotency.retention",
                    Duration.ofHours(24),
                    Duration.ofMinutes(1),
                    Duration.ofDays(3650)),
                c.integer("postbox.idempotency.max-body-bytes", 1 << 20, 1, 64 << 20)),
            InboxConfig.parse(c),
            new Redrive(
                c.has("postbox.outbox.redrive.delay")
                    ? c.duration(
                        "postbox.outbox.redrive.delay",
                        Duration.ofMinutes(10),
                        Duration.ofSeconds(1),
                        Duration.ofDays(30))
                    : null,
                c.integer("postbox.outbox.redrive.max-times", 3, 1, 1_000)),
            c.integer("postbox.datasource.max-pool-size", 50, 1, 100_000),
            c.has("postbox.member-name")
                ? c.string("postbox.member-name", null)
                : defaultMemberName());
    c.requireNoUnknownKeys();
    return s;
  }

  /**
   * The instance's name across its restarts: the host's, and the server's folder (the working
   * directory of a Liberty server is its output folder, one per server on a host). Unlike the
   * instance id (which leases are held under, and which is new at every start so that a paused old
   * process and its restart are never taken for one another), it lets a broker hand a restarted
   * instance its share back at once.
   */
  static String defaultMemberName() {
    String host = System.getenv("HOSTNAME");
    if (host == null || host.isBlank()) {
      try {
        host = java.net.InetAddress.getLocalHost().getHostName();
      } catch (java.io.IOException unknown) {
        host = "host";
      }
    }
    java.nio.file.Path dir =
        java.nio.file.Path.of(System.getProperty("user.dir", "")).toAbsolutePath();
    String folder = dir.getFileName() == null ? "postbox" : dir.getFileName().toString();
    return host + "-" + folder;
  }

  private static String defaultInstanceId() {
    String host = System.getenv().getOrDefault("HOSTNAME", "host");
    return host
        + "-"
        + ProcessHandle.current().pid()
        + "-"
        + UUID.randomUUID().toString().substring(0, 8);
  }
}
