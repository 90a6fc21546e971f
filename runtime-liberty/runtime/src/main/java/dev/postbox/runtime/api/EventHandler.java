package dev.postbox.runtime.api;

import dev.postbox.spi.Envelope;

/**
 * Handles events of one subscription: implement it on a CDI bean annotated with {@link Handles}. It
 * runs inside the JTA transaction that also records the event in the inbox, so its business writes
 * (through the application's JTA persistence unit or data source) and any outbox events it records
 * commit or roll back with that record. Throwing rolls everything back; the event is retried with
 * back-off, then dead-lettered.
 */
public interface EventHandler {

  void handle(Envelope event) throws Exception;
}
