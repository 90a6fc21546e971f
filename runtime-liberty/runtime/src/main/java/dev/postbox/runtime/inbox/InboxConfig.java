package dev.postbox.runtime.inbox;

import dev.postbox.runtime.common.RetryPolicy;
import dev.postbox.runtime.retention.Retention;
import dev.postbox.spi.BrokerConfig;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The {@code postbox.inbox.*} keys: how every subscription's inbox runs, and which subscriptions
 * run in deferred mode.
 *
 * @param deferred groups, or {@code destination/group} subscriptions, in deferred mode; {@code *}
 *     for all
 * @param redriveDelay how long a HANDLER_FAILED dead letter waits before an automatic replay; null
 *     turns automatic re-drive off
 * @param stuckAfter how long a delivery may wait for its acknowledgement before its subscription
 *     counts as stuck (readiness DOWN); longer than the retries' longest delay
 * @param frontWindow how long the in-memory dedup front keeps each processed id
 * @param frontMaxIds the front's size bound per subscription; 0 turns the front off
 * @param sequenced groups, or {@code destination/group} subscriptions, in sequenced mode (a key's
 *     later events parked behind its open dead letter); {@code *} for all. Inline mode only
 */
public record InboxConfig(
    RetryPolicy retry,
    int maxPayloadBytes,
    boolean batch,
    int workers,
    Set<String> deferred,
    Duration dedupWindow,
    int retentionBatch,
    Duration redriveDelay,
    int redriveMaxTimes,
    Duration stuckAfter,
    Duration frontWindow,
    int frontMaxIds,
    Set<String> sequenced) {

  public static final List<String> KEYS =
      List.of(
          "postbox.inbox.max-attempts",
          "postbox.inbox.initial-delay",
          "postbox.inbox.max-delay",
          "postbox.inbox.max-payload-bytes",
          "postbox.inbox.batch",
          "postbox.inbox.workers",
          "postbox.inbox.deferred",
          "postbox.inbox.dedup-window",
          "postbox.inbox.retention.batch",
          "postbox.inbox.redrive.delay",
          "postbox.inbox.redrive.max-times",
          "postbox.inbox.stuck-after",
          "postbox.inbox.front.window",
          "postbox.inbox.front.max-ids",
          "postbox.inbox.sequenced");

  public static InboxConfig parse(BrokerConfig c) {
    RetryPolicy retry =
        new RetryPolicy(
            c.integer("postbox.inbox.max-attempts", 10, 1, 1_000),
            c.duration(
                "postbox.inbox.initial-delay",
                Duration.ofSeconds(1),
                Duration.ZERO,
                Duration.ofHours(1)),
            c.duration(
                "postbox.inbox.max-delay",
                Duration.ofMinutes(5),
                Duration.ZERO,
                Duration.ofDays(1)),
            0.2);
    Set<String> deferred = names(c.string("postbox.inbox.deferred", ""));
    Set<String> sequenced = names(c.string("postbox.inbox.sequenced", ""));
    Duration redrive =
        c.has("postbox.inbox.redrive.delay")
            ? c.duration(
                "postbox.inbox.redrive.delay",
                Duration.ofMinutes(10),
                Duration.ofSeconds(1),
                Duration.ofDays(30))
            : null;
    return new InboxConfig(
        retry,
        c.integer("postbox.inbox.max-payload-bytes", 1024 * 1024, 1, 256 * 1024 * 1024),
        c.bool("postbox.inbox.batch", true),
        c.integer("postbox.inbox.workers", 1, 1, 256),
        deferred,
        c.duration(
            "postbox.inbox.dedup-window",
            Retention.DEFAULT_DEDUP_WINDOW,
            Duration.ofMinutes(1),
            Duration.ofDays(3650)),
        c.integer("postbox.inbox.retention.batch", 1_000, 1, 100_000),
        redrive,
        c.integer("postbox.inbox.redrive.max-times", 3, 1, 1_000),
        c.duration(
            "postbox.inbox.stuck-after",
            Duration.ofMinutes(15),
            Duration.ofSeconds(1),
            Duration.ofDays(1)),
        c.duration(
            "postbox.inbox.front.window",
            Duration.ofMinutes(10),
            Duration.ofSeconds(1),
            Duration.ofDays(30)),
        c.integer("postbox.inbox.front.max-ids", 100_000, 0, 100_000_000),
        sequenced);
  }

  private static Set<String> names(String list) {
    return Arrays.stream(list.split(","))
        .map(String::trim)
        .filter(s -> !s.isEmpty())
        .collect(Collectors.toUnmodifiableSet());
  }

  private static boolean names(Set<String> names, String destination, String group) {
    return names.contains("*")
        || names.contains(group)
        || names.contains(destination + "/" + group);
  }

  boolean isDeferred(String destination, String group) {
    return names(deferred, destination, group);
  }

  /**
   * Whether a subscription runs in sequenced mode; a subscription named by both {@code
   * postbox.inbox.sequenced} and {@code postbox.inbox.deferred} is refused with the reason.
   */
  boolean isSequenced(String destination, String group) {
    boolean s = names(sequenced, destination, group);
    if (s && isDeferred(destination, group)) {
      throw new dev.postbox.spi.ConfigException(
          "postbox.inbox.sequenced",
          "subscription "
              + destination
              + "/"
              + group
              + " is named by both postbox.inbox.sequenced and postbox.inbox.deferred:"
              + " sequenced mode runs inline only");
    }
    return s;
  }

  InboxSettings settingsFor(String destination, String group, Set<String> types) {
    InboxSettings settings =
        InboxSettings.of(destination + "/" + group)
            .withTypes(types)
            .withRetry(retry)
            .withMaxPayloadBytes(maxPayloadBytes)
            .withBatch(batch)
            .withWorkers(workers)
            .withDeferred(isDeferred(destination, group))
            .withSequenced(isSequenced(destination, group));
    // Never longer than the database keeps ids: past that, the database no longer knows an id,
    // and a copy with another payload must be processed as new, not acked by the front.
    Duration window = frontWindow.compareTo(dedupWindow) < 0 ? frontWindow : dedupWindow;
    return frontMaxIds == 0 ? settings : settings.withFront(window, frontMaxIds);
  }

  /**
   * The startup warning for a dedup window shorter than what the broker may redeliver, if any.
   *
   * @param horizon the broker's redelivery horizon for the destination, empty when unknown
   */
  static Optional<String> horizonWarning(
      String destination, Duration window, Optional<Duration> horizon) {
    if (horizon.isEmpty() || horizon.get().compareTo(window) <= 0) {
      return Optional.empty();
    }
    String kept =
        horizon.get().equals(ChronoUnit.FOREVER.getDuration())
            ? "without limit"
            : "for " + horizon.get();
    return Optional.of(
        "the inbox dedup window ("
            + window
            + ") is shorter than the time the broker keeps messages of '"
            + destination
            + "' ("
            + kept
            + "): a redelivery older than the window would be processed a second time."
            + " Raise postbox.inbox.dedup-window, or shorten the broker's retention.");
  }
}
