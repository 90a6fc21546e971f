package dev.postbox.payments;

import dev.postbox.broker.artemis.testing.ArtemisTestBroker;
import dev.postbox.broker.kafka.testing.KafkaTestBroker;
import dev.postbox.broker.sqs.testing.ElasticMqTestBroker;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * A real broker for the crash harness: its settings for the app and for the harness's own
 * republisher, poison injection, and a restart where the broker keeps its messages across one.
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

  /** The adapter's name: kafka, artemis or sqs. */
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
   * Fails the broker for a few seconds, keeping its messages: a restart, or for SQS FIFO an outage
   * of the endpoint (see {@link Sqs}).
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

  /** Text messages that are not events, straight to an Artemis queue. */
  static void sendJmsPoison(String url, String user, String password, String queue, int count)
      throws Exception {
    try (var factory = new org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory(url);
        var connection = factory.createConnection(user, password);
        var session = connection.createSession(false, jakarta.jms.Session.AUTO_ACKNOWLEDGE);
        var producer = session.createProducer(session.createQueue(queue))) {
      for (int i = 0; i < count; i++) {
        producer.send(session.createTextMessage("poison " + i));
      }
    }
  }

  static TortureBroker of(String name) {
    return switch (name) {
      case "kafka" -> new Kafka();
      case "artemis" -> new Artemis();
      case "sqs" -> new Sqs(false);
      case "sqs-fifo" -> new Sqs(true);
      case "embedded" -> new Embedded();
      default -> throw new IllegalArgumentException("no torture broker '" + name + "'");
    };
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
      sendJmsPoison("tcp://127.0.0.1:" + port, USER, PASSWORD, orders, count);
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

  /** Kafka (KRaft) in this JVM; a restart keeps its log. */
  static final class Kafka extends TortureBroker {
    private final KafkaTestBroker kafka = KafkaTestBroker.start();

    Kafka() {
      kafka.createTopic(orders, 8);
      kafka.createTopic(payments, 8);
    }

    @Override
    String name() {
      return "kafka";
    }

    @Override
    Map<String, String> adapterConfig() {
      // Kafka's defaults (session.timeout.ms 45 s): a restarted server takes its partitions back
      // at once as the same static member (postbox.member-name), without waiting for them.
      return Map.of("bootstrap.servers", kafka.bootstrapServers());
    }

    @Override
    Map<String, String> republisherConfig() {
      return Map.of("bootstrap.servers", kafka.bootstrapServers());
    }

    @Override
    void injectPoison(int count) throws Exception {
      try (KafkaProducer<byte[], byte[]> raw =
          new KafkaProducer<>(
              Map.of(
                  ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers(),
                  ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class,
                  ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class))) {
        for (int i = 0; i < count; i++) {
          raw.send(new ProducerRecord<>(orders, ("poison " + i).getBytes(StandardCharsets.UTF_8)))
              .get();
        }
      }
    }

    @Override
    void restart() {
      kafka.restart();
    }

    @Override
    public void close() {
      kafka.close();
    }
  }

  /** Artemis in this JVM with a persistent journal; a restart keeps the journal. */
  static final class Artemis extends TortureBroker {
    private final ArtemisTestBroker artemis = ArtemisTestBroker.start();

    @Override
    String name() {
      return "artemis";
    }

    @Override
    Map<String, String> adapterConfig() {
      return Map.of("url", artemis.url());
    }

    @Override
    Map<String, String> republisherConfig() {
      // Artemis would drop our copies by their duplicate id before the inbox could see them.
      return Map.of("url", artemis.url(), "duplicate.detection", "false");
    }

    @Override
    void injectPoison(int count) throws Exception {
      sendJmsPoison(artemis.url(), null, null, orders, count);
    }

    @Override
    void restart() {
      artemis.restart();
    }

    @Override
    public void close() {
      artemis.close();
    }
  }

  /**
   * ElasticMQ standing in for SQS, in this JVM. Standard queues, or FIFO queues (message groups by
   * key, so order per key is promised). SQS itself never restarts; what its clients meet is an
   * endpoint that goes away. Standard queues: the server keeps its messages in a database and
   * restarts. FIFO queues: the server stays up, in memory, and its endpoint is taken away for five
   * seconds (connections reset, new ones refused), because ElasticMQ's restart forgets FIFO group
   * locks (see {@code ElasticMqFifoStandInIT} in broker-sqs).
   */
  static final class Sqs extends TortureBroker {
    private static final Duration OUTAGE = Duration.ofSeconds(5);
    private final boolean fifo;
    private final Path storage;
    private final ElasticMqTestBroker sqs;

    Sqs(boolean fifo) {
      super(fifo ? ".fifo" : "");
      this.fifo = fifo;
      try {
        storage = Files.createTempDirectory("torture-elasticmq");
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      sqs = fifo ? ElasticMqTestBroker.withOutages() : ElasticMqTestBroker.persistent(storage);
      sqs.createQueue(orders);
      sqs.createQueue(payments);
    }

    @Override
    boolean ordered() {
      return fifo;
    }

    @Override
    String label() {
      return fifo ? "sqs-fifo" : "sqs";
    }

    @Override
    Map<String, String> adapterConfig() {
      return sqs.config("fifo", Boolean.toString(fifo));
    }

    @Override
    String name() {
      return "sqs";
    }

    @Override
    void injectPoison(int count) {
      String url = sqs.client().getQueueUrl(b -> b.queueName(orders)).queueUrl();
      for (int i = 0; i < count; i++) {
        int n = i;
        sqs.client()
            .sendMessage(
                b -> {
                  b.queueUrl(url).messageBody("poison " + n);
                  if (fifo) {
                    b.messageGroupId("poison").messageDeduplicationId("poison-" + n);
                  }
                });
      }
    }

    @Override
    void restart() {
      if (fifo) {
        sqs.outage(OUTAGE);
      } else {
        sqs.restart();
      }
    }

    @Override
    String restartLabel() {
      return fifo ? "SQS endpoint outage of " + OUTAGE.toSeconds() + " s" : super.restartLabel();
    }

    @Override
    public void close() throws IOException {
      sqs.close();
      try (Stream<Path> files = Files.walk(storage)) {
        for (Path f : (Iterable<Path>) files.sorted(Comparator.reverseOrder())::iterator) {
          Files.delete(f);
        }
      }
    }
  }
}
