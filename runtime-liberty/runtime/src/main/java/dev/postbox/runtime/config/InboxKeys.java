package dev.postbox.runtime.config;

import static dev.postbox.runtime.config.ConfigKey.bool;
import static dev.postbox.runtime.config.ConfigKey.duration;
import static dev.postbox.runtime.config.ConfigKey.integer;
import static dev.postbox.runtime.config.ConfigKey.names;

import dev.postbox.runtime.retention.Retention;
import java.time.Duration;
import java.util.Set;

/** The {@code postbox.inbox.*} keys, each declared once; {@link PostboxKeys#ALL} lists them too. */
public final class InboxKeys {

  private InboxKeys() {}

  public static final ConfigKey<Integer> INBOX_MAX_ATTEMPTS =
      integer(
          "postbox.inbox.max-attempts",
          10,
          1,
          1_000,
          "Attempts before a `HANDLER_FAILED` dead letter.");

  public static final ConfigKey<Duration> INBOX_INITIAL_DELAY =
      duration(
          "postbox.inbox.initial-delay",
          Duration.ofSeconds(1),
          Duration.ZERO,
          Duration.ofHours(1),
          "Back-off after the first failure (doubling, with jitter).");

  public static final ConfigKey<Duration> INBOX_MAX_DELAY =
      duration(
          "postbox.inbox.max-delay",
          Duration.ofMinutes(5),
          Duration.ZERO,
          Duration.ofDays(1),
          "Back-off cap.");

  public static final ConfigKey<Integer> INBOX_MAX_PAYLOAD_BYTES =
      integer(
          "postbox.inbox.max-payload-bytes",
          1024 * 1024,
          1,
          256 * 1024 * 1024,
          "Larger payloads are `OVERSIZED` dead letters.");

  public static final ConfigKey<Boolean> INBOX_BATCH =
      bool("postbox.inbox.batch", true, "One transaction per poll batch (split on a failure).");

  public static final ConfigKey<Integer> INBOX_WORKERS =
      integer(
          "postbox.inbox.workers",
          1,
          1,
          256,
          "Inline: parallel lanes by key; deferred: worker threads.");

  public static final ConfigKey<Set<String>> INBOX_DEFERRED =
      names(
          "postbox.inbox.deferred",
          "Groups or `destination/group` subscriptions in deferred mode; `*` for all.");

  public static final ConfigKey<Set<String>> INBOX_SEQUENCED =
      names(
          "postbox.inbox.sequenced",
          "Groups or `destination/group` subscriptions in sequenced mode; `*` for all. Inline"
              + " mode only: a subscription named here and in `postbox.inbox.deferred` fails the"
              + " deployment.");

  public static final ConfigKey<Duration> INBOX_DEDUP_WINDOW =
      duration(
          "postbox.inbox.dedup-window",
          Retention.DEFAULT_DEDUP_WINDOW,
          Duration.ofMinutes(1),
          Duration.ofDays(3650),
          "Inbox rows older than this are deleted; keep it above the broker's redelivery horizon"
              + " (startup warns otherwise).");

  public static final ConfigKey<Integer> INBOX_RETENTION_BATCH =
      integer(
          "postbox.inbox.retention.batch", 1_000, 1, 100_000, "Rows per inbox retention delete.");

  public static final ConfigKey<Duration> INBOX_REDRIVE_DELAY =
      duration(
              "postbox.inbox.redrive.delay",
              Duration.ofMinutes(10),
              Duration.ofSeconds(1),
              Duration.ofDays(30),
              "Automatic re-drive of `HANDLER_FAILED` letters after this delay.")
          .defaultIs("(off)");

  public static final ConfigKey<Integer> INBOX_REDRIVE_MAX_TIMES =
      integer("postbox.inbox.redrive.max-times", 3, 1, 1_000, "Re-drives per letter.");

  public static final ConfigKey<Duration> INBOX_STUCK_AFTER =
      duration(
          "postbox.inbox.stuck-after",
          Duration.ofMinutes(15),
          Duration.ofSeconds(1),
          Duration.ofDays(1),
          "A delivery that waits this long for its acknowledgement makes its subscription"
              + " *stuck*: readiness DOWN, a gauge, a WARNING. Keep it above the retries' whole"
              + " schedule.");

  public static final ConfigKey<Duration> INBOX_FRONT_WINDOW =
      duration(
          "postbox.inbox.front.window",
          Duration.ofMinutes(10),
          Duration.ofSeconds(1),
          Duration.ofDays(30),
          "The in-memory dedup front keeps every id processed within this window (at most the"
              + " dedup window).");

  public static final ConfigKey<Integer> INBOX_FRONT_MAX_IDS =
      integer(
          "postbox.inbox.front.max-ids",
          100_000,
          0,
          100_000_000,
          "Size bound of each subscription's dedup front; about 27 bytes per id, allocated at"
              + " start; `0` turns the front off.");
}
