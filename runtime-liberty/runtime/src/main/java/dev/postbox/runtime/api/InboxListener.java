package dev.postbox.runtime.api;

import dev.postbox.spi.Envelope;

/** Hears what the inbox did, for metrics. Called on consumer threads; keep it cheap. */
public interface InboxListener {

  default void processed(String subscription, Envelope event) {}

  /** Deferred mode: recorded and acknowledged; a worker runs the handler later. */
  default void received(String subscription, Envelope event) {}

  default void duplicate(String subscription, Envelope event) {}

  default void retried(String subscription, Envelope event, int attempts) {}

  default void deadLettered(String subscription, DeadLetterReason reason) {}

  /** Sequenced mode: an event was parked behind an open dead letter of its key. */
  default void parked(String subscription, Envelope event) {}

  /** The handler ran for {@code took}, whether it succeeded or not. */
  default void handled(String subscription, java.time.Duration took) {}

  InboxListener NONE = new InboxListener() {};
}
