package dev.postbox.runtime.inbox;

/**
 * The inbox could not write to its database, not even a failed attempt or a dead letter: the
 * deliveries not yet settled must stay unsettled (no ack without a commit), and the consumer pauses
 * and tries them again, in order, instead of burning attempts or polling past them. See {@link
 * ConsumerLoop}.
 */
final class InboxUnavailableException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  InboxUnavailableException(String subscription, RuntimeException cause) {
    super("the inbox of " + subscription + " cannot write to its database: " + cause, cause);
  }
}
