package dev.postbox.spi.testing;

import java.util.Map;

/**
 * A real broker for tests outside its adapter's module: the crash harness, the inbox's poison runs
 * and the in-container deployments take one through {@link TestBrokers} (the harness and the poison
 * runs without naming the adapter). Each adapter's test-jar offers its brokers with a {@link
 * Provider} registered in {@code META-INF/services/dev.postbox.spi.testing.TestBroker$Provider}; a
 * new adapter that does so joins every such test without an edit there.
 *
 * <p>A broker from {@link Provider#start()} is the caller's own: it may be restarted, stopped and
 * resumed, and keeps its messages across each. One from {@link Provider#shared()} lives as long as
 * the JVM and must not be stopped.
 */
public interface TestBroker extends AutoCloseable {

  /** An adapter's test brokers, found through {@link java.util.ServiceLoader}. */
  interface Provider {

    /**
     * The variant's name: the adapter's name (kafka), or the adapter's name and a flavour
     * (sqs-fifo). Unique among the registered providers.
     */
    String name();

    /** The adapter's name, as its {@link dev.postbox.spi.BrokerProvider} registers it. */
    default String adapter() {
      return name();
    }

    /** Whether the broker keeps per-key order (SQS standard queues do not). */
    default boolean ordered() {
      return true;
    }

    /**
     * Whether the broker drops a byte-for-byte copy of a message on its own (SQS FIFO within its
     * five-minute deduplication interval), so a test that republishes copies to reach the inbox
     * must not count on them arriving.
     */
    default boolean dropsCopies() {
      return false;
    }

    /** What a destination's name must end with (.fifo for SQS FIFO queues); usually empty. */
    default String destinationSuffix() {
      return "";
    }

    /** The broker shared by every test in this JVM; started on first use. */
    TestBroker shared();

    /** A broker of the caller's own, which it closes; it keeps its messages across a restart. */
    TestBroker start();

    /** The adapter's settings for an address where no broker answers. */
    Map<String, String> unreachableConfig();
  }

  /** The provider this broker came from. */
  Provider provider();

  /** The variant's name ({@link Provider#name()}). */
  default String name() {
    return provider().name();
  }

  /** The adapter's settings for this broker, without the {@code postbox.broker.} prefix. */
  Map<String, String> config();

  /**
   * The settings for a publisher that must reach the inbox with copies of messages already sent:
   * the adapter's settings minus any broker-side deduplication the adapter turns on.
   */
  default Map<String, String> republisherConfig() {
    return config();
  }

  /**
   * Makes a destination ready for use where the broker does not create it on first use (a Kafka
   * topic with {@code partitions} partitions, an SQS queue); nothing where it does.
   */
  void createDestination(String name, int partitions);

  /**
   * Sends a message the broker's own way, with no adapter in between: a body and headers (Kafka
   * record headers, JMS string properties, SQS string attributes). Tests use it for input no
   * adapter would send.
   */
  void sendRaw(String destination, Map<String, String> headers, String body) throws Exception;

  /** How many headers a raw message may carry here (SQS allows 10 attributes). */
  default int maxRawHeaders() {
    return 40;
  }

  /**
   * Takes the broker away for a few seconds and brings it back with its messages: a restart, or
   * where a restart would lose state the broker never loses (SQS FIFO group locks), an outage of
   * its endpoint. Only for a broker from {@link Provider#start()}.
   */
  void restart();

  /** What {@link #restart()} does, for a run's summary. */
  default String restartLabel() {
    return "broker restart";
  }

  /** Stops the broker, keeping its messages, until {@link #resume()}. */
  void stop();

  /** Brings a stopped broker back, on the same address. */
  void resume();

  @Override
  void close();
}
