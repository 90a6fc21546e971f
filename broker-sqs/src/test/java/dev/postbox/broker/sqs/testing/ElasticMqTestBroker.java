package dev.postbox.broker.sqs.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.util.HashMap;
import java.util.Map;
import org.elasticmq.rest.sqs.SQSRestServer;
import org.elasticmq.rest.sqs.SQSRestServerBuilder;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.CreateQueueRequest;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;

/**
 * A real SQS-compatible server (ElasticMQ) in the test JVM on a dynamic port. {@link #shared()}
 * serves every test class in the JVM. ElasticMQ keeps queues in memory.
 */
public final class ElasticMqTestBroker implements AutoCloseable {

  public static final String ACCESS_KEY = "test";
  public static final String SECRET_KEY = "test";

  private static ElasticMqTestBroker shared;

  private final SQSRestServer server;
  private final int port;
  private final SqsClient admin;

  private ElasticMqTestBroker() {
    this.server = SQSRestServerBuilder.withDynamicPort().withInterface("localhost").start();
    this.port = server.waitUntilStarted().localAddress().getPort();
    this.admin =
        SqsClient.builder()
            .endpointOverride(URI.create(endpoint()))
            .region(Region.US_EAST_1)
            .credentialsProvider(
                StaticCredentialsProvider.create(
                    AwsBasicCredentials.create(ACCESS_KEY, SECRET_KEY)))
            .build();
  }

  /** The server shared by all tests in this JVM; stopped at JVM exit. */
  public static synchronized ElasticMqTestBroker shared() {
    if (shared == null) {
      shared = new ElasticMqTestBroker();
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
    try (ServerSocket socket = new ServerSocket(0)) {
      return "http://localhost:" + socket.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
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

  /** A plain SQS client for tests that talk to the server directly. */
  public SqsClient client() {
    return admin;
  }

  @Override
  public void close() {
    admin.close();
    server.stopAndWait();
  }
}
