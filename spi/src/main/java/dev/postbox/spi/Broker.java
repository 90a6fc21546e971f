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

  /**
   * Asks the broker whether it answers now, for readiness probes. Returns normally if it answered
   * within the timeout.
   *
   * @param timeout how long to wait for an answer; not null, positive
   * @throws RetriableBrokerException the broker did not answer in time, or refused the connection
   * @throws UnsupportedOperationException the adapter cannot tell (the default); callers report the
   *     broker's state as unknown
   */
  default void ping(java.time.Duration timeout) {
    throw new UnsupportedOperationException(name() + " adapter cannot check connectivity");
  }

  /**
   * How long the broker keeps a message of this destination available for redelivery (Kafka's topic
   * retention, SQS's message retention period), where the adapter can find out. An inbox whose
   * dedup window is shorter can process an old redelivery a second time.
   *
   * @param destination the topic or queue; not null
   * @return the horizon, {@link java.time.temporal.ChronoUnit#FOREVER}'s duration for unbounded
   *     retention, or empty when unknown (the default); never null
   * @throws RetriableBrokerException the broker could not be asked now
   */
  default java.util.Optional<java.time.Duration> redeliveryHorizon(String destination) {
    return java.util.Optional.empty();
  }

  @Override
  void close();
}
