package dev.postbox.runtime.inbox;

import java.util.Map;

/**
 * One reading of the inbox's health, taken every five seconds.
 *
 * @param brokerUp true if the broker answered, false if not, null if the adapter cannot tell
 * @param brokerError why the ping failed, or null
 * @param databaseError why the database query failed, or null
 * @param deferredDepths events waiting for deferred workers, per subscription
 * @param failingLoops subscriptions whose loop has failed for 30 s or more, or is stuck, with why
 */
public record InboxHealth(
    Boolean brokerUp,
    String brokerError,
    String databaseError,
    Map<String, Long> deferredDepths,
    Map<String, String> failingLoops) {

  /** Before the first reading. */
  public static final InboxHealth NOT_CHECKED =
      new InboxHealth(null, "not checked yet", "not checked yet", Map.of(), Map.of());

  /** With no subscription: nothing to hold. */
  public static final InboxHealth NONE = new InboxHealth(null, null, null, Map.of(), Map.of());
}
