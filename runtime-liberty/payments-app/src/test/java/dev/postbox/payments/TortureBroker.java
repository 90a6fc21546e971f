package dev.postbox.payments;

import dev.postbox.spi.testing.TestBroker;
import dev.postbox.spi.testing.TestBrokers;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;

/**
 * A real broker for the crash harness: its settings for the app and for the harness's own
 * republisher, poison injection, and a restart where the broker keeps its messages across one.
 * Every broker an adapter's test-jar registers ({@link TestBrokers}) can be one, plus {@link
 * Embedded}, the Artemis broker inside the payments server.
 */
abstract class TortureBroker implements AutoCloseable {

  /** Destinations of this run only, so runs on a shared broker never meet. */
  final String orders;

  final String payments;

  TortureBroker() {
    this("");
  }

  /**
   * @param suffix what the destinations' names end with (.fifo for SQS FIFO queues)
   */
  TortureBroker(String suffix) {
    orders = "torture-orders-" + UUID.randomUUID().toString().substring(0, 8) + suffix;
    payments = "torture-payments-" + UUID.randomUUID().toString().substring(0, 8) + suffix;
  }

  /** The adapter's name, as the server's {@code postbox.broker} names it. */
  abstract String name();

  /** The run's name for the broker, e.g. kafka, or embedded for the Artemis inside the server. */
  String label() {
    return name();
  }

  /** Whether the broker promises per-key order (SQS standard queues do not). */
  boolean ordered() {
    return true;
  }

  /** Whether the broker runs inside the server (starts and dies with it). */
  boolean embedded() {
    return false;
  }

  /** The adapter's settings, without the {@code postbox.broker.} prefix. */
  abstract Map<String, String> adapterConfig();

  /** Publishes messages that are not events to the orders destination. */
  abstract void injectPoison(int count) throws Exception;

  /**
   * Fails the broker for a few seconds, keeping its messages: a restart, or an outage of its
   * endpoint where a restart would lose what the real broker never loses ({@link
   * TestBroker#restart()}).
   */
  abstract void restart();

  /** What {@link #restart()} does, for the run's summary. */
  String restartLabel() {
    return "broker restart";
  }

  /** Server variables: the adapter, its settings, and this run's destinations. */
  Map<String, String> serverVariables() {
    Map<String, String> v = new HashMap<>();
    v.put("postbox.broker", name());
    adapterConfig().forEach((k, value) -> v.put("postbox.broker." + k, value));
    v.put("payments.orders.topic", orders);
    v.put("payments.payments.topic", payments);
    v.put("payments.embedded-artemis", "false");
    return v;
  }

  /** The harness's own publisher: the adapter's settings, minus broker-side deduplication. */
  Map<String, String> republisherConfig() {
    return adapterConfig();
  }

  /**
   * The registered test broker named {@code name}, or embedded.
   *
   * @param restarts whether the run restarts the broker: then it gets one of its own; otherwise it
   *     shares the JVM's (its destinations are its own either way)
   */
  static TortureBroker of(String name, boolean restarts) {
    return name.equals("embedded")
        ? new Embedded()
        : new Registered(TestBrokers.named(name), restarts);
  }

  /**
   * The embedded default: the Artemis broker inside the server, with its journal in the server's
   * folder, so every SIGKILL kills the broker too and its journal restarts with the app. The
   * harness reaches it over the TCP acceptor, with the credentials the server requires there.
   */
  static final class Embedded extends TortureBroker {
    static final String USER = "torture";
    static final String PASSWORD = "torture-broker-secret";
    private final int port = freePort();

    @Override
    String name() {
      return "artemis";
    }

    @Override
    String label() {
      return "embedded";
    }

    @Override
    boolean embedded() {
      return true;
    }

    @Override
    Map<String, String> adapterConfig() {
      return Map.of("url", "vm://0");
    }

    @Override
    Map<String, String> serverVariables() {
      Map<String, String> v = super.serverVariables();
      v.put("payments.embedded-artemis", "true");
      v.put("payments.embedded-artemis.tcp-port", Integer.toString(port));
      v.put("payments.embedded-artemis.tcp-user", USER);
      v.put("payments.embedded-artemis.tcp-password", PASSWORD);
      return v;
    }

    @Override
    void injectPoison(int count) throws Exception {
      // text messages that are not events, straight to the embedded broker's queue
      try (var factory =
              new org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory(
                  "tcp://127.0.0.1:" + port);
          var connection = factory.createConnection(USER, PASSWORD);
          var session = connection.createSession(false, jakarta.jms.Session.AUTO_ACKNOWLEDGE);
          var producer = session.createProducer(session.createQueue(orders))) {
        for (int i = 0; i < count; i++) {
          producer.send(session.createTextMessage("poison " + i));
        }
      }
    }

    @Override
    void restart() {
      throw new UnsupportedOperationException("the embedded broker restarts with the server");
    }

    @Override
    public void close() {}

    private static int freePort() {
      try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
        return s.getLocalPort();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }

  /**
   * A broker an adapter's test-jar registers, started for this run alone if the run restarts it: 8
   * partitions per destination where the broker has partitions.
   */
  static final class Registered extends TortureBroker {
    private final TestBroker broker;

    Registered(TestBroker.Provider provider, boolean own) {
      super(provider.destinationSuffix());
      this.broker = own ? provider.start() : provider.shared();
      broker.createDestination(orders, 8);
      broker.createDestination(payments, 8);
    }

    @Override
    String name() {
      return broker.provider().adapter();
    }

    @Override
    String label() {
      return broker.name();
    }

    @Override
    boolean ordered() {
      return broker.provider().ordered();
    }

    @Override
    Map<String, String> adapterConfig() {
      return broker.config();
    }

    @Override
    Map<String, String> republisherConfig() {
      return broker.republisherConfig();
    }

    @Override
    void injectPoison(int count) throws Exception {
      for (int i = 0; i < count; i++) {
        broker.sendRaw(orders, Map.of(), "poison " + i);
      }
    }

    @Override
    void restart() {
      broker.restart();
    }

    @Override
    String restartLabel() {
      return broker.restartLabel();
    }

    @Override
    public void close() {
      broker.close();
    }
  }
}
