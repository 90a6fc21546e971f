package dev.postbox.runtime.inbox;

import dev.postbox.runtime.api.DeadLetterReason;
import dev.postbox.runtime.api.UnprocessableEventException;
import dev.postbox.runtime.common.RetryPolicy;
import dev.postbox.spi.Envelope;
import java.sql.Connection;
import java.sql.SQLException;

/**
 * The inbox's one failure path, used alike by the inline receiver ({@link Recording}), the deferred
 * workers ({@link DeferredInbox}) and the replay of dead letters ({@link DeadLetters}): the handler
 * call, how what it throws travels through the transaction runner, and what a failure leads to, a
 * retry or a dead letter with its reason.
 *
 * <p>A leaf: it knows the handler, the retry policy and the api's exception, and nothing of the
 * inbox's flow, so every part of the inbox may call it and it calls none of them.
 */
final class HandlerCall {

  private HandlerCall() {}

  /**
   * Runs the handler in the caller's transaction. A checked exception travels as a {@link
   * HandlerException}; SQL and runtime exceptions as they are.
   */
  static void run(InboxHandler handler, Connection c, Envelope e) throws SQLException {
    try {
      handler.handle(c, e);
    } catch (SQLException | RuntimeException rethrow) {
      throw rethrow;
    } catch (Exception checked) {
      throw new HandlerException(checked);
    }
  }

  /**
   * An {@link Error} thrown by a handler (a NoClassDefFoundError, an AssertionError, a stack
   * overflow on a deeply nested payload): an attempt like any other, so it ends as a dead letter
   * instead of a delivery nacked for ever. Any other {@link VirtualMachineError} (out of memory, an
   * internal error) is the JVM's trouble, not the event's, and is thrown on.
   */
  static RuntimeException asAttempt(Error error) {
    if (error instanceof VirtualMachineError fatal && !(error instanceof StackOverflowError)) {
      throw fatal;
    }
    return new HandlerException(error);
  }

  /** Carries a checked handler exception, or an error, through the transaction runner. */
  static final class HandlerException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    HandlerException(Throwable cause) {
      super(cause.getMessage(), cause);
    }
  }

  /**
   * A failure, read once: what the handler (or its transaction) threw, as attempts and dead letters
   * store it, and whether a retry could fix it.
   *
   * @param cause what was thrown, a {@link HandlerException} unwrapped
   * @param error the cause's class and message, as stored
   * @param unprocessable the reason of an {@link UnprocessableEventException}, which no retry
   *     fixes; null for any other failure
   */
  record Failure(Throwable cause, String error, DeadLetterReason unprocessable) {

    static Failure of(Throwable thrown) {
      Throwable cause = thrown instanceof HandlerException h ? h.getCause() : thrown;
      return new Failure(
          cause,
          Failures.describe(cause),
          cause instanceof UnprocessableEventException u ? u.reason() : null);
    }

    /** Whether it is dead-lettered now, before any attempt is counted. */
    boolean isFinal() {
      return unprocessable != null;
    }

    /**
     * The decision after {@code attempts} attempts: the dead letter's reason, or null to retry with
     * {@link RetryPolicy#delayAfter}.
     */
    DeadLetterReason letterAfter(int attempts, RetryPolicy retry) {
      if (unprocessable != null) {
        return unprocessable;
      }
      return attempts >= retry.maxAttempts() ? DeadLetterReason.HANDLER_FAILED : null;
    }
  }
}
