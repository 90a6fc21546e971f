package dev.postbox.broker.kafka.testing;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import kafka.tools.StorageTool;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Time;

/**
 * A real Kafka broker in the test JVM: one KRaft node that is both broker and controller, on free
 * ports, with its log under {@code java.io.tmpdir} (the module's {@code target/} in our builds).
 *
 * <p>{@link #shared()} is started once per JVM and shared by every test class that needs a broker;
 * tests that restart or stop the broker start their own with {@link #start()}. Other modules reuse
 * it through this module's test-jar.
 */
public final class KafkaTestBroker implements AutoCloseable {

  private static KafkaTestBroker shared;

  private final Path logDir;
  private final int port;
  private final int controllerPort;
  private final String clusterId = Uuid.randomUuid().toString();
  private KafkaRaftServer server;
  private Admin admin;

  private KafkaTestBroker() {
    try {
      this.logDir = Files.createTempDirectory("kafka-test-broker-");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    this.port = freePort();
    this.controllerPort = freePort();
  }

  /** The broker shared by all tests in this JVM; started on first use, stopped at JVM exit. */
  public static synchronized KafkaTestBroker shared() {
    if (shared == null) {
      shared = start();
      Runtime.getRuntime().addShutdownHook(new Thread(shared::close, "kafka-test-broker-stop"));
    }
    return shared;
  }

  /** A new broker of the caller's own, for tests that restart or stop it. */
  public static KafkaTestBroker start() {
    KafkaTestBroker broker = new KafkaTestBroker();
    broker.format();
    broker.startServer();
    return broker;
  }

  /** {@code localhost:port} of the plaintext listener. */
  public String bootstrapServers() {
    return "localhost:" + port;
  }

  /** A {@code localhost} address where nothing listens. */
  public static String unreachableBootstrapServers() {
    return "localhost:" + freePort();
  }

  /** Creates a topic and waits until it is ready. */
  public void createTopic(String name, int partitions) {
    createTopic(name, partitions, Map.of());
  }

  /** Creates a topic with per-topic configs (e.g. {@code max.message.bytes}). */
  public void createTopic(String name, int partitions, Map<String, String> configs) {
    try {
      admin()
          .createTopics(List.of(new NewTopic(name, partitions, (short) 1).configs(configs)))
          .all()
          .get(30, TimeUnit.SECONDS);
      // Metadata propagates asynchronously: wait until every partition has a leader.
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (System.nanoTime() < deadline) {
        try {
          var description = admin().describeTopics(List.of(name)).allTopicNames().get().get(name);
          if (description.partitions().size() == partitions
              && description.partitions().stream().allMatch(p -> p.leader() != null)
              && servesOffsets(name, partitions)) {
            return;
          }
        } catch (ExecutionException e) {
          if (!(e.getCause()
              instanceof org.apache.kafka.common.errors.UnknownTopicOrPartitionException)) {
            throw e;
          }
          // Not propagated yet: ask again shortly.
        }
        java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
      }
      throw new IllegalStateException("topic " + name + " has no leaders after 30s");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
      throw new IllegalStateException("could not create topic " + name, e);
    }
  }

  /**
   * Whether every partition's leader answers ListOffsets. Metadata can name a leader before the
   * partition accepts writes; a produce in that gap gets NOT_LEADER_OR_FOLLOWER, and the idempotent
   * producer can then wedge on out-of-order sequences until its delivery timeout.
   */
  private boolean servesOffsets(String topic, int partitions) throws InterruptedException {
    Map<org.apache.kafka.common.TopicPartition, org.apache.kafka.clients.admin.OffsetSpec> specs =
        new java.util.HashMap<>();
    for (int p = 0; p < partitions; p++) {
      specs.put(
          new org.apache.kafka.common.TopicPartition(topic, p),
          org.apache.kafka.clients.admin.OffsetSpec.latest());
    }
    try {
      admin().listOffsets(specs).all().get(5, TimeUnit.SECONDS);
      return true;
    } catch (ExecutionException | java.util.concurrent.TimeoutException notYet) {
      return false;
    }
  }

  /** An admin client for this broker, closed with it. */
  public synchronized Admin admin() {
    if (admin == null) {
      admin =
          Admin.create(
              Map.of(
                  AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG,
                  bootstrapServers(),
                  AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG,
                  "30000"));
    }
    return admin;
  }

  /** Stops the server, keeping its data; {@link #restart()} brings it back on the same ports. */
  public synchronized void stop() {
    if (server != null) {
      server.shutdown();
      server.awaitShutdown();
      server = null;
    }
  }

  /** Starts a stopped server again, on the same ports and log. */
  public synchronized void resume() {
    if (server == null) {
      startServer();
    }
  }

  /** Stops and starts the server on the same ports and log. */
  public synchronized void restart() {
    stop();
    startServer();
  }

  @Override
  public synchronized void close() {
    if (admin != null) {
      admin.close(Duration.ofSeconds(5));
      admin = null;
    }
    stop();
  }

  private Properties properties() {
    Properties p = new Properties();
    p.put("process.roles", "broker,controller");
    p.put("node.id", "1");
    p.put("controller.quorum.voters", "1@localhost:" + controllerPort);
    p.put(
        "listeners", "PLAINTEXT://localhost:" + port + ",CONTROLLER://localhost:" + controllerPort);
    p.put("advertised.listeners", "PLAINTEXT://localhost:" + port);
    p.put("controller.listener.names", "CONTROLLER");
    p.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
    p.put("inter.broker.listener.name", "PLAINTEXT");
    p.put("log.dirs", logDir.toString());
    p.put("num.partitions", "1");
    p.put("offsets.topic.replication.factor", "1");
    p.put("offsets.topic.num.partitions", "4");
    p.put("transaction.state.log.replication.factor", "1");
    p.put("transaction.state.log.min.isr", "1");
    p.put("transaction.state.log.num.partitions", "4");
    p.put("share.coordinator.state.topic.replication.factor", "1");
    p.put("share.coordinator.state.topic.min.isr", "1");
    p.put("group.initial.rebalance.delay.ms", "0");
    // Lets tests use short session timeouts, so a killed member is noticed in seconds.
    p.put("group.min.session.timeout.ms", "1000");
    p.put("auto.create.topics.enable", "true");
    return p;
  }

  private void format() {
    try {
      Path config = logDir.resolveSibling(logDir.getFileName() + ".properties");
      try (OutputStream out = Files.newOutputStream(config)) {
        properties().store(out, "postbox test broker");
      }
      ByteArrayOutputStream output = new ByteArrayOutputStream();
      int exit =
          StorageTool.execute(
              new String[] {
                "format", "-t", clusterId, "-c", config.toString(), "--ignore-formatted"
              },
              new PrintStream(output, true, StandardCharsets.UTF_8));
      if (exit != 0) {
        throw new IllegalStateException("formatting the Kafka log failed: " + output);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private void startServer() {
    KafkaConfig config = KafkaConfig.fromProps(properties(), false);
    server = new KafkaRaftServer(config, Time.SYSTEM);
    server.startup();
    awaitReady();
  }

  private void awaitReady() {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    Exception last = null;
    while (System.nanoTime() < deadline) {
      try {
        if (!admin().describeCluster().nodes().get(5, TimeUnit.SECONDS).isEmpty()) {
          return;
        }
      } catch (Exception e) {
        last = e;
      }
    }
    throw new IllegalStateException("Kafka test broker did not become ready", last);
  }

  private static int freePort() {
    try (ServerSocket socket = new ServerSocket(0)) {
      socket.setReuseAddress(true);
      return socket.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
