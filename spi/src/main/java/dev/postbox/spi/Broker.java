package dev.postbox.spi;

/**
 * A connection to one broker, made by a {@link BrokerProvider} from configuration.
 *
 * <p>Thread-safe. Closing a broker closes its publisher and every consumer it opened. {@link
 * #close()} is idempotent; every other method throws {@link IllegalStateException} after it.
 */
public interface Broker extends AutoCloseable {

  /** The provider name this broker was opened with, e.g. {@code kafka}. */
  String name();

  /** What this broker can do; constant for the broker's life. */
  Capabilities capabilities();

  /** The broker's publisher, shared by all callers; never {@code null}. */
  Publisher publisher();

  /**
   * Opens a consumer. Each call returns a new consumer; several consumers of one group in one
   * process share the work as consumers in different processes would.
   *
   * @throws PermanentBrokerException the destination cannot be consumed from
   * @throws RetriableBrokerException the broker is unreachable now
   */
  Consumer subscribe(Subscription subscription);

  @Override
  void close();
}
