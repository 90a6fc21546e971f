package dev.postbox.runtime;

import dev.postbox.runtime.common.RetryPolicy;
import dev.postbox.runtime.inbox.InboxConfig;
import dev.postbox.runtime.relay.OutboxEngine;
import dev.postbox.runtime.relay.RelaySettings;
import dev.postbox.spi.BrokerConfig;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Postbox's own configuration, the {@code postbox.*} keys, parsed once from a plain map (the
 * Jakarta wiring fills it from MicroProfile Config).
 *
 * @param relayEnabled whether this instance publishes ({@code postbox.relay.enabled})
 * @param migrate whether to apply the schema migrations at start
 * @param dataSource the JNDI name of the data source that holds the outbox
 * @param brokerName the adapter's name, or {@code none}
 * @param brokerConfig the {@code postbox.broker.*} keys, handed to the adapter without the prefix
 * @param poolSize the data source's connection pool size, as stated by the configuration
 * @param memberName this instance's name across restarts, under which its consumers join groups
 * @param datePartitions date-partitioned retention of the outbox and inbox ({@code
 *     postbox.date-partitions}, PostgreSQL), or null for batched deletes
 */
public record PostboxSettings(
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
    OutboxEngine.Redrive outboxRedrive,
    int poolSize,
    String memberName,
    Duration datePartitions) {

  private static final System.Logger LOG = System.getLogger(PostboxSettings.class.getName());

  /**
   * The {@code Idempotency-Key} settings.
   *
   * @param inFlightTimeout how long a claimed key holds before a retry may take it over
   * @param retention how long a key and its answer are kept
   * @param maxBodyBytes the largest request body an idempotent method takes
   */
  public record Idempotency(Duration inFlightTimeout, Duration retention, int maxBodyBytes) {}

  /** Every postbox key besides the broker's pass-through keys. */
  public static final List<String> KEYS =
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
          "postbox.datasource.max-pool-size",
          "postbox.date-partitions",
          "postbox.date-partitions.interval");

  /** Every key the parser knows. */
  public static final List<String> ALL_KEYS =
      java.util.stream.Stream.concat(KEYS.stream(), InboxConfig.KEYS.stream()).toList();

  /**
   * Reads and validates every {@code postbox.*} key of the map; a bad value or an unknown key
   * fails, naming the key.
   */
  public static PostboxSettings parse(Map<String, String> raw) {
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
    Duration bucketInterval =
        c.duration(
            "postbox.date-partitions.interval",
            Duration.ofDays(1),
            Duration.ofMinutes(1),
            Duration.ofDays(366));
    Duration datePartitions = c.bool("postbox.date-partitions", false) ? bucketInterval : null;
    PostboxSettings s =
        new PostboxSettings(
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
            new OutboxEngine.Redrive(
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
                : defaultMemberName(),
            datePartitions);
    c.requireNoUnknownKeys();
    if (datePartitions != null) {
      s.checkBuckets();
    }
    return s;
  }

  /**
   * At most {@value #MAX_BUCKETS} buckets kept per table: a statement that cannot prune by bucket
   * (an update by id) plans and locks every partition and its indexes, and PostgreSQL's shared lock
   * table holds a few thousand locks in all.
   */
  static final int MAX_BUCKETS = 100;

  private void checkBuckets() {
    Duration longest =
        relay.retention().compareTo(inbox.dedupWindow()) > 0
            ? relay.retention()
            : inbox.dedupWindow();
    long buckets = longest.toSeconds() / Math.max(1, datePartitions.toSeconds()) + 3;
    if (buckets > MAX_BUCKETS) {
      throw new IllegalArgumentException(
          "postbox.date-partitions.interval="
              + datePartitions
              + " keeps about "
              + buckets
              + " partitions per table for a retention of "
              + longest
              + " (postbox.retention / postbox.inbox.dedup-window); at most "
              + MAX_BUCKETS
              + ": make the interval at least "
              + Duration.ofSeconds(longest.toSeconds() / (MAX_BUCKETS - 3) + 1));
    }
  }

  /**
   * The instance's name across its restarts: the host's, and the server's folder (the working
   * directory of a Liberty server is its output folder, one per server on a host). Unlike the
   * instance id (which leases are held under, and which is new at every start so that a paused old
   * process and its restart are never taken for one another), it lets a broker hand a restarted
   * instance its share back at once.
   */
  public static String defaultMemberName() {
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

  /**
   * Refuses a relay that could take every pooled connection: its workers each hold one connection
   * (briefly, never during a broker call), and the application's requests need the rest.
   *
   * <p>A Jakarta EE application cannot read its data source's pool size, so {@code
   * postbox.datasource.max-pool-size} states it (Liberty's default {@code maxPoolSize} is 50);
   * server.xml can set both from one variable, as the payments server does.
   */
  void checkPoolSize() {
    if (!relayEnabled) {
      return;
    }
    int workers = relay.workerThreads();
    String source = "postbox.datasource.max-pool-size is " + poolSize;
    if (workers >= poolSize) {
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
}
