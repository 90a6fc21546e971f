package dev.postbox.runtime.config;

import static dev.postbox.runtime.config.ConfigKey.bool;
import static dev.postbox.runtime.config.ConfigKey.duration;
import static dev.postbox.runtime.config.ConfigKey.integer;
import static dev.postbox.runtime.config.ConfigKey.string;

import dev.postbox.runtime.common.RetryPolicy;
import dev.postbox.spi.BrokerConfig;
import java.time.Duration;
import java.util.List;

/**
 * Every {@code postbox.*} key, each declared once (see {@link ConfigKey}). {@code PostboxSettings}
 * and {@code InboxConfig} read them, the Jakarta wiring looks each one up in the environment, and
 * {@code docs/configuration.md} is generated from them ({@code ConfigurationDocTest} fails when it
 * is not).
 */
public final class PostboxKeys {

  private PostboxKeys() {}

  // ---- the instance and its database

  public static final ConfigKey<String> BROKER =
      string(
              "postbox.broker",
              null,
              "The adapter's name: `kafka`, `artemis`, `sqs`, or `none` (record only). Its own keys"
                  + " are `postbox.broker.<key>`, e.g. `postbox.broker.bootstrap.servers`; as"
                  + " environment variables `POSTBOX_BROKER_<KEY>`, read with `_` as `.`. Secret"
                  + " values are never logged.")
          .defaultIs("(required while the relay runs)");

  public static final ConfigKey<Boolean> RELAY_ENABLED =
      bool("postbox.relay.enabled", true, "Run the relay in this instance.");

  public static final ConfigKey<String> DATASOURCE =
      string(
          "postbox.datasource",
          "jdbc/postbox",
          "JNDI name of the JTA data source that holds the outbox; `Outbox.record` writes through"
              + " it, in the caller's transaction.");

  public static final ConfigKey<Integer> DATASOURCE_MAX_POOL_SIZE =
      integer(
          "postbox.datasource.max-pool-size",
          50,
          1,
          100_000,
          "The data source's `maxPoolSize` (Liberty's default is 50). An application cannot read"
              + " it, so state it; the payments server sets both from the variable"
              + " `db.max-pool-size`.");

  public static final ConfigKey<Boolean> MIGRATE =
      bool("postbox.migrate", true, "Apply Postbox's migrations at startup.");

  public static final ConfigKey<Boolean> DURABILITY_ACCEPT_UNSAFE =
      bool(
          "postbox.durability.accept-unsafe",
          false,
          "Start even on a database that loses acknowledged commits on a process crash (H2 with"
              + " `WRITE_DELAY` > 0, in-memory H2). For throwaway demos only; see"
              + " [outbox.md](outbox.md).");

  public static final ConfigKey<String> INSTANCE_ID =
      string(
              "postbox.instance-id",
              null,
              "Lease owner name. New at every start on purpose: a paused old process and its"
                  + " restart are never taken for one another.")
          .defaultIs("host-pid-random");

  public static final ConfigKey<String> MEMBER_NAME =
      string(
              "postbox.member-name",
              null,
              "This instance's name across its restarts; must differ between instances that run"
                  + " at the same time. Consumers join their groups under it, so a broker can hand"
                  + " a restarted instance its share back at once (Kafka: static membership).")
          .defaultIs("host + server folder");

  // ---- the relay

  public static final ConfigKey<Integer> PARTITIONS =
      integer(
          "postbox.partitions",
          64,
          1,
          4096,
          "P. Must be the same on every instance, and not changed while rows are pending.");

  public static final ConfigKey<Integer> BATCH_SIZE =
      integer("postbox.batch-size", 500, 1, 10_000, "Rows per relay turn.");

  public static final ConfigKey<Duration> LEASE =
      duration(
          "postbox.lease",
          Duration.ofSeconds(30),
          Duration.ofSeconds(1),
          Duration.ofHours(1),
          "Lease duration; a crashed instance's partitions move after at most this.");

  public static final ConfigKey<Duration> POLL_INTERVAL =
      duration(
          "postbox.poll-interval",
          Duration.ofMillis(500),
          Duration.ofMillis(10),
          Duration.ofMinutes(10),
          "Safety-net polling.");

  public static final ConfigKey<Integer> WORKERS =
      integer(
          "postbox.workers",
          4,
          1,
          256,
          "Relay turns at once in one instance. Must be below `postbox.datasource.max-pool-size`,"
              + " or the deployment fails.");

  public static final ConfigKey<Boolean> DELETE_ON_DISPATCH =
      bool(
          "postbox.delete-on-dispatch",
          false,
          "Delete rows when published instead of marking them.");

  public static final ConfigKey<Integer> RETRY_MAX_ATTEMPTS =
      integer(
          "postbox.retry.max-attempts",
          10,
          1,
          1_000,
          "Kept for compatibility; the relay no longer parks rows after it. A row is FAILED only"
              + " on a **permanent** error (an event the broker refuses, e.g. too large); a"
              + " retriable one retries for as long as it takes, so an outage never parks the"
              + " backlog.");

  public static final ConfigKey<Duration> RETRY_INITIAL_DELAY =
      duration(
          "postbox.retry.initial-delay",
          Duration.ofSeconds(1),
          Duration.ZERO,
          Duration.ofHours(1),
          "Back-off after a row's first failed publish (doubling, 20% jitter).");

  public static final ConfigKey<Duration> RETRY_MAX_DELAY =
      duration(
          "postbox.retry.max-delay",
          Duration.ofMinutes(5),
          Duration.ZERO,
          Duration.ofDays(1),
          "Back-off cap; it also caps the wait between retries during an outage.");

  public static final ConfigKey<Duration> RETRY_OUTAGE_PROBE_INTERVAL =
      duration(
          "postbox.retry.outage-probe-interval",
          Duration.ofSeconds(10),
          Duration.ofMillis(10),
          Duration.ofHours(1),
          "The longest wait between two tries of a destination that is out (see"
              + " [outbox.md](outbox.md), broker outages).");

  public static final ConfigKey<Duration> OUTBOX_REDRIVE_DELAY =
      duration(
              "postbox.outbox.redrive.delay",
              Duration.ofMinutes(10),
              Duration.ofSeconds(1),
              Duration.ofDays(30),
              "Re-drive FAILED rows automatically after this long.")
          .defaultIs("(off)");

  public static final ConfigKey<Integer> OUTBOX_REDRIVE_MAX_TIMES =
      integer("postbox.outbox.redrive.max-times", 3, 1, 1_000, "Re-drives per row.");

  public static final ConfigKey<Duration> RETENTION =
      duration(
          "postbox.retention",
          Duration.ofDays(7),
          Duration.ZERO,
          Duration.ofDays(3650),
          "How long settled outbox rows stay.");

  public static final ConfigKey<Integer> RETENTION_BATCH =
      integer("postbox.retention.batch", 1_000, 1, 100_000, "Outbox rows per retention delete.");

  public static final ConfigKey<Boolean> DATE_PARTITIONS =
      bool(
          "postbox.date-partitions",
          false,
          "PostgreSQL: date-partitioned outbox and inbox, old buckets dropped instead of deleted"
              + " ([retention.md](retention.md)).");

  public static final ConfigKey<Duration> DATE_PARTITIONS_INTERVAL =
      duration(
          "postbox.date-partitions.interval",
          Duration.ofDays(1),
          Duration.ofMinutes(1),
          Duration.ofDays(366),
          "How long one bucket takes new rows; at most 100 buckets per table are kept.");

  public static final ConfigKey<Duration> LAG_THRESHOLD =
      duration(
          "postbox.lag.threshold",
          Duration.ofMinutes(1),
          Duration.ofSeconds(1),
          Duration.ofDays(1),
          "Readiness goes DOWN when the oldest pending row is older.");

  // ---- idempotency keys

  public static final ConfigKey<Duration> IDEMPOTENCY_IN_FLIGHT_TIMEOUT =
      duration(
          "postbox.idempotency.in-flight-timeout",
          Duration.ofSeconds(30),
          Duration.ofSeconds(1),
          Duration.ofHours(1),
          "How long an `@Idempotent` request's claim on its key holds; after it, a retry takes the"
              + " key over (the first request, if still alive, is fenced out and rolls back).");

  public static final ConfigKey<Duration> IDEMPOTENCY_RETENTION =
      duration(
          "postbox.idempotency.retention",
          Duration.ofHours(24),
          Duration.ofMinutes(1),
          Duration.ofDays(3650),
          "How long idempotency keys and their answers are kept; expired ones are deleted every"
              + " minute in batches of 1,000.");

  public static final ConfigKey<Integer> IDEMPOTENCY_MAX_BODY_BYTES =
      integer(
          "postbox.idempotency.max-body-bytes",
          1 << 20,
          1,
          64 << 20,
          "The largest body an `@Idempotent` method takes (413 above).");

  /** Every key, in the order of {@code docs/configuration.md}. */
  public static final List<ConfigKey<?>> ALL =
      List.of(
          BROKER,
          RELAY_ENABLED,
          DATASOURCE,
          DATASOURCE_MAX_POOL_SIZE,
          MIGRATE,
          DURABILITY_ACCEPT_UNSAFE,
          INSTANCE_ID,
          MEMBER_NAME,
          PARTITIONS,
          BATCH_SIZE,
          LEASE,
          POLL_INTERVAL,
          WORKERS,
          DELETE_ON_DISPATCH,
          RETRY_MAX_ATTEMPTS,
          RETRY_INITIAL_DELAY,
          RETRY_MAX_DELAY,
          RETRY_OUTAGE_PROBE_INTERVAL,
          OUTBOX_REDRIVE_DELAY,
          OUTBOX_REDRIVE_MAX_TIMES,
          RETENTION,
          RETENTION_BATCH,
          DATE_PARTITIONS,
          DATE_PARTITIONS_INTERVAL,
          LAG_THRESHOLD,
          IDEMPOTENCY_IN_FLIGHT_TIMEOUT,
          IDEMPOTENCY_RETENTION,
          IDEMPOTENCY_MAX_BODY_BYTES,
          InboxKeys.INBOX_MAX_ATTEMPTS,
          InboxKeys.INBOX_INITIAL_DELAY,
          InboxKeys.INBOX_MAX_DELAY,
          InboxKeys.INBOX_MAX_PAYLOAD_BYTES,
          InboxKeys.INBOX_BATCH,
          InboxKeys.INBOX_WORKERS,
          InboxKeys.INBOX_DEFERRED,
          InboxKeys.INBOX_SEQUENCED,
          InboxKeys.INBOX_DEDUP_WINDOW,
          InboxKeys.INBOX_RETENTION_BATCH,
          InboxKeys.INBOX_REDRIVE_DELAY,
          InboxKeys.INBOX_REDRIVE_MAX_TIMES,
          InboxKeys.INBOX_STUCK_AFTER,
          InboxKeys.INBOX_FRONT_WINDOW,
          InboxKeys.INBOX_FRONT_MAX_IDS);

  /** The names of every key. */
  public static List<String> keyNames() {
    return ALL.stream().map(ConfigKey::name).toList();
  }

  /** A retry policy read from its three keys, with 20% jitter: the relay's and the inbox's. */
  public static RetryPolicy retry(
      BrokerConfig c,
      ConfigKey<Integer> maxAttempts,
      ConfigKey<Duration> initialDelay,
      ConfigKey<Duration> maxDelay) {
    return new RetryPolicy(maxAttempts.read(c), initialDelay.read(c), maxDelay.read(c), 0.2);
  }
}
