package dev.postbox.spi;

/** A transient broker failure: the same operation may succeed if retried later. */
public final class RetriableBrokerException extends BrokerException {

  private static final long serialVersionUID = 1L;

  /**
   * @param message what failed, without secrets
   * @param cause the broker client's exception; may be {@code null}
   */
  public RetriableBrokerException(String message, Throwable cause) {
    super(message, cause);
  }

  public RetriableBrokerException(String message) {
    this(message, null);
  }

  @Override
  public boolean isRetriable() {
    return true;
  }
}
