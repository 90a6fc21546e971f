package dev.postbox.runtime.inbox;

import java.util.Map;

/**
 * One reading of the inbox's health, taken every five seconds.
 *
 * @param brokerUp true if the broker answered, false if not, null if the adapter cannot tell
 * @param brokerError why the ping failed, or null
 * @param databaseError why the database query failed, or null
 * @param deferredDepths events in the inbox queue (deferred: waiting for a worker; inline: waiting
 *     for a retry, and the later events of their keys), per subscription
 * @param failingLoops subscriptions whose loop has failed for 30 s or more, or is stuck, with why
 * @param openLetters per subscription with any, its open dead letters and parked events
 */
public record InboxHealth(
    Boolean brokerUp,
    String brokerError,
    String databaseError,
    Map<String, Long> deferredDepths,
    Map<String, String> failingLoops,
    Map<String, OpenLetters> openLetters) {

  /**
   * What waits for an operator in one subscription: they stay until replayed or discarded, however
   * quiet the subscription is.
   *
   * @param open open dead letters, every reason but PARKED
   * @param parked PARKED letters: events of a sequenced subscription waiting behind their key's
   *     open letter
   * @param parkedKeys the keys those parked events belong to: keys that do not move
   */
  public record OpenLetters(long open, long parked, long parkedKeys) {}

  /** A reading without open letters' counts. */
  public InboxHealth(
      Boolean brokerUp,
      String brokerError,
      String databaseError,
      Map<String, Long> deferredDepths,
      Map<String, String> failingLoops) {
    this(brokerUp, brokerError, databaseError, deferredDepths, failingLoops, Map.of());
  }

  /** Before the first reading. */
  public static final InboxHealth NOT_CHECKED =
      new InboxHealth(null, "not checked yet", "not checked yet", Map.of(), Map.of());

  /** With no subscription: nothing to hold. */
  public static final InboxHealth NONE = new InboxHealth(null, null, null, Map.of(), Map.of());
}
