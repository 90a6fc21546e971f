package dev.postbox.runtime.inbox;

import dev.postbox.runtime.api.DeadLetterReason;
import dev.postbox.runtime.common.RetryPolicy;
import java.util.Objects;
import java.util.Set;

/**
 * How one subscription's inbox works.
 *
 * @param subscription the dedup scope: the same event may feed several subscriptions, and each runs
 *     it once
 * @param types event types this subscription handles; anything else is dead-lettered as {@link
 *     DeadLetterReason#UNKNOWN_TYPE}. Empty means every type.
 * @param retry back-off between attempts, and the maximum attempts before dead-lettering
 * @param maxPayloadBytes larger payloads are dead-lettered as {@link DeadLetterReason#OVERSIZED}
 * @param batch process a poll batch in one transaction (splitting it on failure) instead of one
 *     transaction per delivery
 * @param workers inline mode: lanes a poll batch is split into by key and processed in parallel (a
 *     key stays in one lane, in order); deferred mode: worker threads claiming queued events
 * @param deferred receive, record and acknowledge first, and run the handler later on a worker (for
 *     slow handlers and short broker visibility timeouts); inline (false) runs the handler in the
 *     receiving transaction
 * @param front the in-memory dedup front ({@link dev.postbox.runtime.dedup.DedupFront}) that
 *     acknowledges copies of recently processed events without a database round trip; null for
 *     none. Inline mode only: in deferred mode it is ignored
 * @param sequenced park a key's later events behind its open dead letter ({@link #withSequenced});
 *     inline mode only
 */
record InboxSettings(
    String subscription,
    Set<String> types,
    RetryPolicy retry,
    int maxPayloadBytes,
    boolean batch,
    int workers,
    boolean deferred,
    Front front,
    boolean sequenced) {

  /**
   * The dedup front's size: every id processed within {@code window} is kept, up to about {@code
   * maxIds} (~27 bytes each, allocated when the inbox starts).
   */
  public record Front(java.time.Duration window, int maxIds) {
    public Front {
      Objects.requireNonNull(window, "window");
      if (window.isNegative() || window.isZero()) {
        throw new IllegalArgumentException("the dedup front's window must be positive: " + window);
      }
      if (maxIds < 1) {
        throw new IllegalArgumentException("the dedup front must hold at least one id: " + maxIds);
      }
    }
  }

  public InboxSettings {
    if (subscription == null || subscription.isBlank()) {
      throw new IllegalArgumentException("subscription must not be blank");
    }
    types = Set.copyOf(Objects.requireNonNull(types, "types"));
    Objects.requireNonNull(retry, "retry");
    if (maxPayloadBytes < 1) {
      throw new IllegalArgumentException("maxPayloadBytes must be positive");
    }
    if (workers < 1) {
      throw new IllegalArgumentException("workers must be >= 1");
    }
  }

  /** Every type, default retries, 1 MiB payloads, batched transactions. */
  public static InboxSettings of(String subscription) {
    return new InboxSettings(
        subscription, Set.of(), RetryPolicy.defaults(), 1024 * 1024, true, 1, false, null, false);
  }

  public InboxSettings withTypes(Set<String> t) {
    return new InboxSettings(
        subscription, t, retry, maxPayloadBytes, batch, workers, deferred, front, sequenced);
  }

  public InboxSettings withRetry(RetryPolicy r) {
    return new InboxSettings(
        subscription, types, r, maxPayloadBytes, batch, workers, deferred, front, sequenced);
  }

  public InboxSettings withMaxPayloadBytes(int n) {
    return new InboxSettings(
        subscription, types, retry, n, batch, workers, deferred, front, sequenced);
  }

  public InboxSettings withBatch(boolean b) {
    return new InboxSettings(
        subscription, types, retry, maxPayloadBytes, b, workers, deferred, front, sequenced);
  }

  public InboxSettings withWorkers(int n) {
    return new InboxSettings(
        subscription, types, retry, maxPayloadBytes, batch, n, deferred, front, sequenced);
  }

  public InboxSettings withDeferred(boolean d) {
    if (d && sequenced) {
      throw new IllegalArgumentException(
          "subscription " + subscription + ": sequenced mode runs inline only, not deferred");
    }
    return new InboxSettings(
        subscription, types, retry, maxPayloadBytes, batch, workers, d, front, sequenced);
  }

  /**
   * Sequenced (inline mode only): an event whose key has an open dead letter is parked behind it (a
   * {@link dev.postbox.runtime.api.DeadLetterReason#PARKED} letter) instead of being handled, and
   * the key's parked events are replayed in order once the letters before them are settled.
   */
  public InboxSettings withSequenced(boolean s) {
    if (s && deferred) {
      throw new IllegalArgumentException(
          "subscription " + subscription + ": sequenced mode runs inline only, not deferred");
    }
    return new InboxSettings(
        subscription, types, retry, maxPayloadBytes, batch, workers, deferred, front, s);
  }

  /** With a dedup front of this size; see {@link Front}. */
  public InboxSettings withFront(java.time.Duration window, int maxIds) {
    return new InboxSettings(
        subscription,
        types,
        retry,
        maxPayloadBytes,
        batch,
        workers,
        deferred,
        new Front(window, maxIds),
        sequenced);
  }

  /** Without a dedup front: every delivery asks the database. */
  public InboxSettings withoutFront() {
    return new InboxSettings(
        subscription, types, retry, maxPayloadBytes, batch, workers, deferred, null, sequenced);
  }
}
