package dev.postbox.broker.rabbitmq.testing;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * The machine's RabbitMQ server (127.0.0.1:5672, guest/guest, started by {@code .ci/run} if it is
 * down), split into virtual hosts: each test broker gets a vhost of its own, made and removed with
 * {@code rabbitmqctl}. A restart is {@code rabbitmqctl stop_app} and {@code start_app}: it takes
 * the whole server away, every vhost with it, so only tests that run alone may do it (the crash
 * harness's runs are sequential).
 */
public final class LocalRabbitMq {

  public static final String HOST = "127.0.0.1";
  public static final int PORT = 5672;
  public static final String USER = "guest";
  public static final String PASSWORD = "guest";

  private LocalRabbitMq() {}

  /** A new vhost, with every right for {@link #USER}. */
  public static String newVhost(String prefix) {
    String vhost = prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
    ctl("add_vhost", vhost);
    ctl("set_permissions", "-p", vhost, USER, ".*", ".*", ".*");
    return vhost;
  }

  public static void deleteVhost(String vhost) {
    ctl("delete_vhost", vhost);
  }

  /** The adapter's settings for a vhost of the local server. */
  public static Map<String, String> config(String vhost) {
    return Map.of(
        "host", HOST,
        "port", Integer.toString(PORT),
        "vhost", vhost,
        "username", USER,
        "password", PASSWORD);
  }

  /** Settings for a port where nothing listens. */
  public static Map<String, String> unreachableConfig() {
    return Map.of(
        "host",
        HOST,
        "port",
        Integer.toString(freePort()),
        "username",
        USER,
        "password",
        PASSWORD,
        "publish.timeout",
        "3s");
  }

  /** Stops the RabbitMQ application (the server keeps its data) until {@link #startApp()}. */
  public static void stopApp() {
    ctl("stop_app");
  }

  /** Starts the RabbitMQ application and waits until it serves. */
  public static void startApp() {
    ctl("start_app");
    ctl("await_startup");
  }

  /**
   * Declares a destination's shard queues as the adapter does by default (quorum, single active
   * consumer), so a raw message sent before any adapter touched the destination is kept.
   */
  public static void declareShards(String vhost, String destination, int shards) throws Exception {
    try (Connection c = connect(vhost);
        Channel ch = c.createChannel()) {
      Map<String, Object> args = new HashMap<>();
      args.put("x-queue-type", "quorum");
      args.put("x-single-active-consumer", true);
      for (int i = 0; i < shards; i++) {
        ch.queueDeclare(destination + "." + i, true, false, false, args);
      }
    }
  }

  /** Publishes a raw message to a queue of the vhost, waiting for the server's confirm. */
  public static void sendRaw(String vhost, String queue, Map<String, String> headers, String body)
      throws Exception {
    try (Connection c = connect(vhost);
        Channel ch = c.createChannel()) {
      ch.confirmSelect();
      Map<String, Object> h = new HashMap<>(headers);
      ch.basicPublish(
          "",
          queue,
          true,
          new AMQP.BasicProperties.Builder().deliveryMode(2).headers(h).build(),
          body.getBytes(StandardCharsets.UTF_8));
      ch.waitForConfirmsOrDie(10_000);
    }
  }

  /** A plain client connection to the vhost. */
  public static Connection connect(String vhost) throws Exception {
    ConnectionFactory f = new ConnectionFactory();
    f.setHost(HOST);
    f.setPort(PORT);
    f.setVirtualHost(vhost);
    f.setUsername(USER);
    f.setPassword(PASSWORD);
    f.setAutomaticRecoveryEnabled(false);
    return f.newConnection("postbox-test");
  }

  private static void ctl(String... args) {
    List<String> command = new java.util.ArrayList<>(List.of("rabbitmqctl", "-q"));
    command.addAll(List.of(args));
    try {
      Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IllegalStateException(String.join(" ", command) + " failed: " + out.strip());
      }
    } catch (IOException e) {
      throw new UncheckedIOException("rabbitmqctl is not on the PATH", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static int freePort() {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
