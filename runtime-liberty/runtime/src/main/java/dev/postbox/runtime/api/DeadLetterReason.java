package dev.postbox.runtime.api;

/** Why a delivery ended in the dead-letter table instead of being processed. */
public enum DeadLetterReason {
  /** The handler failed on every attempt. */
  HANDLER_FAILED,
  /** The message could not be read as an event (no CloudEvents attributes, invalid values). */
  MALFORMED,
  /** The message has no event id, so it cannot be deduplicated. */
  MISSING_ID,
  /** No handler of this subscription takes the event's type. */
  UNKNOWN_TYPE,
  /** The payload is over the subscription's size limit. */
  OVERSIZED,
  /** An event id seen before arrived with a different payload; it was not processed again. */
  CONFLICT,
  /**
   * Sequenced subscriptions: the event's key had an open dead letter, so the event was parked
   * behind it, not handled. It is replayed in order once the letters before it are settled.
   */
  PARKED,
  /**
   * The event's expiry ({@code expirytime}) had passed when it arrived, or when a deferred worker
   * came to it: never handled. Its error gives the expiry and the time it was found expired. It
   * holds no key back; a replay handles it (the operator's choice).
   */
  EXPIRED
}
