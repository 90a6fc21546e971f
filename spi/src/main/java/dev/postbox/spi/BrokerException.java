package dev.postbox.spi;

/**
 * A broker operation failed. The subtype tells the caller what to do next:
 *
 * <ul>
 *   <li>{@link RetriableBrokerException}: a transient condition (broker unreachable, timeout,
 *       leader election, throttling). The same call may succeed later; back off and retry.
 *   <li>{@link PermanentBrokerException}: retrying the same input cannot succeed (message too
 *       large, not authorised, destination does not exist and cannot be created). Park it.
 *   <li>{@link BatchPublishException}: a batch partly failed; it says which envelopes, and why.
 * </ul>
 *
 * <p>Unchecked, so that it passes through functional interfaces and JTA boundaries without
 * wrapping, and so that {@code @Transactional} rolls back on it by default.
 */
public abstract sealed class BrokerException extends RuntimeException
    permits RetriableBrokerException, PermanentBrokerException, BatchPublishException {

  private static final long serialVersionUID = 1L;

  BrokerException(String message, Throwable cause) {
    super(message, cause);
  }

  /** Whether retrying the same operation later may succeed. */
  public abstract boolean isRetriable();
}
