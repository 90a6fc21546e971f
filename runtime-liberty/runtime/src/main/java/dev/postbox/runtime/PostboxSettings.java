package dev.postbox.runtime;

import static dev.postbox.runtime.config.PostboxKeys.*;

import dev.postbox.runtime.common.RetryPolicy;
import dev.postbox.runtime.config.PostboxKeys;
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

  /** Every key the parser knows: the names of {@link PostboxKeys#ALL}. */
  public static final List<String> ALL_KEYS = PostboxKeys.keyNames();

  /**
   * Reads and validates every {@code postbox.*} key of the map, each by its declaration in {@link
   * PostboxKeys}; a bad value or an unknown key fails, naming the key.
   */
  public static PostboxSettings parse(Map<String, String> raw) {
    BrokerConfig c = BrokerConfig.of("postbox", raw);
    boolean enabled = RELAY_ENABLED.read(c);
    String brokerName = enabled ? BROKER.required(c) : BROKER.readOr(c, "none");
    Map<String, String> brokerConfig = c.withPrefix("postbox.broker.");
    RetryPolicy retry =
        PostboxKeys.retry(c, RETRY_MAX_ATTEMPTS, RETRY_INITIAL_DELAY, RETRY_MAX_DELAY);
    RelaySettings relay =
        new RelaySettings(
            INSTANCE_ID.readOr(c, defaultInstanceId()),
            PARTITIONS.read(c),
            BATCH_SIZE.read(c),
            LEASE.read(c),
            POLL_INTERVAL.read(c),
            WORKERS.read(c),
            DELETE_ON_DISPATCH.read(c),
            retry,
            RETENTION.read(c),
            RETENTION_BATCH.read(c),
            RETRY_OUTAGE_PROBE_INTERVAL.read(c));
    Duration bucketInterval = DATE_PARTITIONS_INTERVAL.read(c);
    Duration datePartitions = DATE_PARTITIONS.read(c) ? bucketInterval : null;
    PostboxSettings s =
        new PostboxSettings(
            enabled,
            MIGRATE.read(c),
            DATASOURCE.read(c),
            brokerName,
            brokerConfig,
            relay,
            LAG_THRESHOLD.read(c),
            DURABILITY_ACCEPT_UNSAFE.read(c),
            new Idempotency(
                IDEMPOTENCY_IN_FLIGHT_TIMEOUT.read(c),
                IDEMPOTENCY_RETENTION.read(c),
                IDEMPOTENCY_MAX_BODY_BYTES.read(c)),
            InboxConfig.parse(c),
            new OutboxEngine.Redrive(
                OUTBOX_REDRIVE_DELAY.isSet(c) ? OUTBOX_REDRIVE_DELAY.read(c) : null,
                OUTBOX_REDRIVE_MAX_TIMES.read(c)),
            DATASOURCE_MAX_POOL_SIZE.read(c),
            MEMBER_NAME.readOrElse(c, PostboxSettings::defaultMemberName),
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
