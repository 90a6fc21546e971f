package dev.postbox.broker.rabbitmq;

import dev.postbox.spi.BrokerConfig;
import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;
import java.util.Map;

/**
 * The RabbitMQ adapter's configuration, validated before anything connects.
 *
 * <p>The server is given either as {@code uri} ({@code amqp://user:password@host:5672/vhost}, or
 * {@code amqps://}) or as {@code host}, {@code port} and {@code vhost}; not both. Credentials are
 * required, in the URI or as {@code username} and {@code password}: the client's own default
 * ({@code guest}) is never used by accident. The password is never logged.
 *
 * @param uri the server's AMQP URI, credentials included when given there
 * @param shards how many queues a destination is split into by key (see {@link Shards})
 */
record RabbitMqSettings(
    URI uri,
    String username,
    String password,
    QueueType queueType,
    int shards,
    boolean declare,
    int prefetch,
    Duration publishTimeout,
    int maxMessageBytes,
    Duration maxNackDelay,
    Duration heartbeat,
    Duration recoveryMaxInterval,
    Duration claimInterval) {

  /** What kind of queue a shard is. */
  enum QueueType {
    /** Replicated through Raft, durable, with a delivery count: the default. */
    QUORUM,
    /** A single node's durable queue, with only the redelivered flag. */
    CLASSIC;

    String argument() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  static final int DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

  static RabbitMqSettings from(Map<String, String> raw) {
    BrokerConfig c = BrokerConfig.of(RabbitMqBrokerProvider.NAME, raw);
    URI uri;
    String uriUser = null;
    String uriPassword = null;
    if (c.has("uri")) {
      for (String other : new String[] {"host", "port", "vhost"}) {
        if (c.has(other)) {
          throw c.invalid(other, "", "is part of uri: set uri, or host, port and vhost, not both");
        }
      }
      String text = c.required("uri");
      try {
        uri = new URI(text);
      } catch (URISyntaxException e) {
        throw c.invalid("uri", "", "is not a URI: " + e.getReason());
      }
      if (!"amqp".equals(uri.getScheme()) && !"amqps".equals(uri.getScheme())) {
        throw c.invalid("uri", "", "must start with amqp:// or amqps://");
      }
      if (uri.getHost() == null) {
        throw c.invalid("uri", "", "names no host");
      }
      String info = uri.getRawUserInfo();
      if (info != null) {
        int colon = info.indexOf(':');
        uriUser = decode(colon < 0 ? info : info.substring(0, colon));
        uriPassword = colon < 0 ? null : decode(info.substring(colon + 1));
      }
      try {
        // Without the credentials: this one is safe to keep and to log.
        uri =
            new URI(uri.getScheme(), null, uri.getHost(), uri.getPort(), uri.getPath(), null, null);
      } catch (URISyntaxException e) {
        throw c.invalid("uri", "", "is not a URI: " + e.getReason());
      }
    } else {
      String host = c.required("host");
      int port = c.integer("port", 5672, 1, 65535);
      String vhost = c.string("vhost", "/");
      try {
        uri = new URI("amqp", null, host, port, "/" + vhost, null, null);
      } catch (URISyntaxException e) {
        throw c.invalid("host", host, "does not make an AMQP URI: " + e.getReason());
      }
    }
    String username = c.optional("username").orElse(uriUser);
    String password = c.optional("password").orElse(uriPassword);
    if (username == null || password == null) {
      throw c.invalid(
          username == null ? "username" : "password",
          "",
          "is required (here or in uri): the adapter never falls back to the client's default"
              + " guest account");
    }
    RabbitMqSettings s =
        new RabbitMqSettings(
            uri,
            username,
            password,
            c.choice("queue.type", QueueType.class, QueueType.QUORUM),
            c.integer("shards", 4, 1, 256),
            c.bool("declare", true),
            c.integer("prefetch", 100, 1, 65_535),
            c.duration(
                "publish.timeout",
                Duration.ofSeconds(30),
                Duration.ofMillis(500),
                Duration.ofMinutes(10)),
            c.integer("max.message.bytes", DEFAULT_MAX_MESSAGE_BYTES, 1, 128 * 1024 * 1024),
            c.duration(
                "nack.max.delay", Duration.ofHours(1), Duration.ZERO, RetryQueues.LONGEST_DELAY),
            c.duration(
                "heartbeat", Duration.ofSeconds(10), Duration.ofSeconds(1), Duration.ofMinutes(10)),
            c.duration(
                "recovery.max.interval",
                Duration.ofSeconds(5),
                Duration.ofMillis(100),
                Duration.ofMinutes(5)),
            c.duration(
                "claim.interval",
                Duration.ofSeconds(1),
                Duration.ofMillis(50),
                Duration.ofMinutes(1)));
    c.requireNoUnknownKeys();
    return s;
  }

  /** The virtual host the URI names; {@code /} when its path is empty. */
  String vhost() {
    String path = uri.getPath();
    return path == null || path.isEmpty() || path.equals("/") ? "/" : path.substring(1);
  }

  private static String decode(String s) {
    return java.net.URLDecoder.decode(
        s.replace("+", "%2B"), java.nio.charset.StandardCharsets.UTF_8);
  }

  @Override
  public String toString() {
    return "RabbitMqSettings[uri="
        + uri
        + ", username="
        + username
        + ", password=(hidden), queue.type="
        + queueType.argument()
        + ", shards="
        + shards
        + "]";
  }
}
