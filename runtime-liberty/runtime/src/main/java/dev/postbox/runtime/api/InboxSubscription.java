package dev.postbox.runtime.api;

import java.util.OptionalLong;

/** One running inbox subscription (destination and consumer group). */
public interface InboxSubscription {

  /** {@code destination/group}. */
  String name();

  String destination();

  /** True if its handlers run on deferred workers after the delivery is acknowledged. */
  boolean deferred();

  /** What it did since this instance started. */
  InboxCounts counts();

  /** Duplicates it rejected over all instances and restarts (read from the database). */
  long duplicatesSinceFirstStart();

  /**
   * Events in the inbox's queue (read from the database): in deferred mode every event waiting for
   * a worker; in inline mode the events waiting for a retry and the later events of their keys.
   */
  OptionalLong deferredQueue();

  DeadLetterOperations deadLetters();
}
