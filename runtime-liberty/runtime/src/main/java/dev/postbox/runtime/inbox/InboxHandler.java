package dev.postbox.runtime.inbox;

import dev.postbox.spi.Envelope;
import java.sql.Connection;

/**
 * The business logic for one event. It runs inside the inbox transaction, on the same connection
 * that records the event as processed: its writes commit if and only if that record commits.
 */
@FunctionalInterface
public interface InboxHandler {

  /**
   * Handles one event. Throwing rolls back everything the handler wrote, and the delivery is
   * retried (nack with back-off) or, after the maximum attempts, dead-lettered with the error.
   */
  void handle(Connection connection, Envelope event) throws Exception;
}
