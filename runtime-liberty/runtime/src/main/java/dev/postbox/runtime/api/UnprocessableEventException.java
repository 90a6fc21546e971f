package dev.postbox.runtime.api;

import java.util.Objects;

/**
 * Thrown by a handler (or the payload decoder in front of it) for an event that no retry can fix,
 * such as a payload that does not decode into the handler's type. The event is dead-lettered at
 * once with the given reason instead of being retried, and the consumer moves on.
 */
public class UnprocessableEventException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  private final DeadLetterReason reason;

  public UnprocessableEventException(DeadLetterReason reason, String message, Throwable cause) {
    super(message, cause);
    this.reason = Objects.requireNonNull(reason, "reason");
  }

  public UnprocessableEventException(String message, Throwable cause) {
    this(DeadLetterReason.MALFORMED, message, cause);
  }

  /** The reason recorded on the dead letter. */
  public DeadLetterReason reason() {
    return reason;
  }
}
