package dev.postbox.runtime.inbox;

import static dev.postbox.runtime.config.InboxKeys.*;

import dev.postbox.runtime.common.RetryPolicy;
import dev.postbox.runtime.config.PostboxKeys;
import dev.postbox.spi.BrokerConfig;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.Optional;
import java.util.Set;

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

  public static InboxConfig parse(BrokerConfig c) {
    return new InboxConfig(
        PostboxKeys.retry(c, INBOX_MAX_ATTEMPTS, INBOX_INITIAL_DELAY, INBOX_MAX_DELAY),
        INBOX_MAX_PAYLOAD_BYTES.read(c),
        INBOX_BATCH.read(c),
        INBOX_WORKERS.read(c),
        INBOX_DEFERRED.read(c),
        INBOX_DEDUP_WINDOW.read(c),
        INBOX_RETENTION_BATCH.read(c),
        INBOX_REDRIVE_DELAY.isSet(c) ? INBOX_REDRIVE_DELAY.read(c) : null,
        INBOX_REDRIVE_MAX_TIMES.read(c),
        INBOX_STUCK_AFTER.read(c),
        INBOX_FRONT_WINDOW.read(c),
        INBOX_FRONT_MAX_IDS.read(c),
        INBOX_SEQUENCED.read(c));
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
