package dev.postbox.spi;

/** A broker failure that retrying the same input cannot cure, e.g. an oversized message. */
public final class PermanentBrokerException extends BrokerException {

  private static final long serialVersionUID = 1L;

  /**
   * @param message what failed and why it cannot succeed, without secrets
   * @param cause the broker client's exception; may be {@code null}
   */
  public PermanentBrokerException(String message, Throwable cause) {
    super(message, cause);
  }

  public PermanentBrokerException(String message) {
    this(message, null);
  }

  @Override
  public boolean isRetriable() {
    return false;
  }
}
