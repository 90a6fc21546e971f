package dev.postbox.broker.sqs.testing;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.elasticmq.rest.sqs.SQSRestServer;
import org.elasticmq.rest.sqs.SQSRestServerBuilder;
import org.elasticmq.server.ElasticMQServer;
import org.elasticmq.server.config.ElasticMQServerConfig;
import scala.Function0;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.CreateQueueRequest;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;

/**
 * A real SQS-compatible server (ElasticMQ) in the test JVM on a dynamic port. {@link #shared()}
 * serves every test class in the JVM and keeps queues in memory; {@link #persistent} keeps them in
 * a database, so that one can be restarted; {@link #withOutages()} keeps them in memory behind an
 * endpoint that can be taken away and brought back.
 *
 * <p>Which to use for a broker failure: ElasticMQ 1.7.1 reloads a stored FIFO queue's messages as
 * non-FIFO ones ({@code ElasticMqFifoStandInIT} shows it), so after a {@link #restart()} a FIFO
 * queue hands out a group's later messages while an earlier one is in flight. Real SQS never
 * restarts; what its clients meet is an endpoint that fails. FIFO runs therefore use {@link
 * #outage}.
 */
public final class ElasticMqTestBroker implements AutoCloseable {

  public static final String ACCESS_KEY = "test";
  public static final String SECRET_KEY = "test";

  private static ElasticMqTestBroker shared;

  private final int port;
  private final SqsClient admin;
  private final Path storage;
  private final EndpointOutage endpoint;
  private Runnable stop;
  private List<String> queuesAtStop = List.of();

  private ElasticMqTestBroker(boolean outages) {
    SQSRestServer server =
        SQSRestServerBuilder.withDynamicPort().withInterface("localhost").start();
    int direct = server.waitUntilStarted().localAddress().getPort();
    this.storage = null;
    this.stop = server::stopAndWait;
    this.endpoint = outages ? new EndpointOutage(direct) : null;
    this.port = outages ? endpoint.port() : direct;
    this.admin = client(direct); // the test's own calls bypass the outages
  }

  private ElasticMqTestBroker(Path storage) {
    this.port = freePort();
    this.storage = storage;
    this.endpoint = null;
    startPersistent();
    this.admin = client(port);
  }

  /**
   * A server of its own that keeps queues and messages in an H2 database under {@code storage}, as
   * ElasticMQ's {@code messages-storage} setting does, so {@link #restart()} loses nothing.
   */
  public static ElasticMqTestBroker persistent(Path storage) {
    return new ElasticMqTestBroker(storage);
  }

  /**
   * A server of its own, in memory, whose endpoint {@link #outage} can take away: open connections
   * are reset and new ones too, while the queues keep every message and every FIFO group lock.
   */
  public static ElasticMqTestBroker withOutages() {
    return new ElasticMqTestBroker(true);
  }

  /**
   * Takes the endpoint away for {@code length} and brings it back on the same port, the server's
   * state untouched.
   *
   * @throws IllegalStateException for a server not made {@link #withOutages()}
   */
  public void outage(Duration length) {
    endpointDown();
    try {
      Thread.sleep(length.toMillis()); // the outage's length, not a wait for work
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      endpointUp();
    }
  }

  /** The start of an {@link #outage}: until {@link #endpointUp()}, nothing answers. */
  public void endpointDown() {
    outages().down();
  }

  /** The end of an {@link #outage}. */
  public void endpointUp() {
    outages().up();
  }

  private EndpointOutage outages() {
    if (endpoint == null) {
      throw new IllegalStateException("only a server made withOutages() has an outage switch");
    }
    return endpoint;
  }

  /**
   * Stops the server and starts it again on the same port, with the messages it had: in flight ones
   * come back when their visibility timeout ends, as on SQS.
   *
   * @throws IllegalStateException for an in-memory server, which would lose everything
   */
  public synchronized void restart() {
    if (storage == null) {
      throw new IllegalStateException("an in-memory ElasticMQ loses its messages on restart");
    }
    stop();
    resume();
  }

  /**
   * Stops a server made {@link #persistent}, keeping its messages, until {@link #resume()}.
   *
   * @throws IllegalStateException for an in-memory server
   */
  public synchronized void stop() {
    if (storage == null) {
      throw new IllegalStateException("an in-memory ElasticMQ loses its messages when stopped");
    }
    if (stop != null) {
      queuesAtStop = admin.listQueues().queueUrls();
      stop.run();
      stop = null;
    }
  }

  /**
   * Starts a server stopped by {@link #stop()} again, on the same port, with its messages, and
   * returns once it has restored its queues.
   */
  public synchronized void resume() {
    if (stop == null) {
      startPersistent();
      // ElasticMQ answers before it has restored its queues from storage; callers get the server
      // back whole. (Clients calling meanwhile may see "queue does not exist".)
      List<String> queues = queuesAtStop;
      org.awaitility.Awaitility.await()
          .atMost(Duration.ofSeconds(30))
          .ignoreExceptions()
          .until(() -> admin.listQueues().queueUrls().containsAll(queues));
    }
  }

  private void startPersistent() {
    Map<String, Object> settings = new HashMap<>();
    settings.put("rest-sqs.bind-port", port);
    settings.put("rest-sqs.bind-hostname", "localhost");
    settings.put("node-address.host", "localhost");
    settings.put("node-address.port", port);
    settings.put("messages-storage.enabled", true);
    settings.put(
        "messages-storage.uri", "jdbc:h2:" + storage.resolve("elasticmq").toAbsolutePath());
    Config config = ConfigFactory.parseMap(settings).withFallback(ConfigFactory.load());
    Function0<?> shutdown = new ElasticMQServer(new ElasticMQServerConfig(config)).start();
    this.stop = shutdown::apply;
  }

  private static SqsClient client(int port) {
    return SqsClient.builder()
        .endpointOverride(URI.create("http://localhost:" + port))
        .region(Region.US_EAST_1)
        .credentialsProvider(
            StaticCredentialsProvider.create(AwsBasicCredentials.create(ACCESS_KEY, SECRET_KEY)))
        .build();
  }

  private static int freePort() {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The server shared by all tests in this JVM; stopped at JVM exit. */
  public static synchronized ElasticMqTestBroker shared() {
    if (shared == null) {
      shared = new ElasticMqTestBroker(false);
      Runtime.getRuntime().addShutdownHook(new Thread(shared::close, "elasticmq-stop"));
    }
    return shared;
  }

  /** {@code http://localhost:<port>}. */
  public String endpoint() {
    return "http://localhost:" + port;
  }

  /** An endpoint where nothing listens. */
  public static String unreachableEndpoint() {
    return "http://localhost:" + freePort();
  }

  /** The adapter configuration for this server, plus extra keys. */
  public Map<String, String> config(String... extra) {
    Map<String, String> c = new HashMap<>();
    c.put("endpoint", endpoint());
    c.put("access.key.id", ACCESS_KEY);
    c.put("secret.access.key", SECRET_KEY);
    for (int i = 0; i < extra.length; i += 2) {
      c.put(extra[i], extra[i + 1]);
    }
    return c;
  }

  /**
   * Creates a queue; a name ending in {@code .fifo} makes a FIFO queue.
   *
   * @return the queue URL
   */
  public String createQueue(String name, Map<QueueAttributeName, String> attributes) {
    Map<QueueAttributeName, String> a = new HashMap<>(attributes);
    if (name.endsWith(".fifo")) {
      a.put(QueueAttributeName.FIFO_QUEUE, "true");
    }
    return admin
        .createQueue(CreateQueueRequest.builder().queueName(name).attributes(a).build())
        .queueUrl();
  }

  public String createQueue(String name) {
    return createQueue(name, Map.of());
  }

  /** A plain SQS client through {@link #endpoint()}, so an {@link #outage} reaches it. */
  public SqsClient clientThroughEndpoint() {
    return client(port);
  }

  /** A plain SQS client for tests that talk to the server directly. */
  public SqsClient client() {
    return admin;
  }

  @Override
  public synchronized void close() {
    admin.close();
    if (endpoint != null) {
      endpoint.close();
    }
    if (stop != null) {
      stop.run();
      stop = null;
    }
  }
}
