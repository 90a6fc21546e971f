package dev.postbox.broker.sqs;

import dev.postbox.spi.BrokerConfig;
import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;
import java.util.Map;

/**
 * The SQS adapter's configuration, validated before anything connects. Region and credentials
 * default to the AWS SDK's chains; static keys are for SQS-compatible servers and tests.
 */
record SqsSettings(
    String region,
    URI endpoint,
    boolean fifo,
    String accessKeyId,
    String secretAccessKey,
    Duration waitTime,
    Duration visibilityTimeout,
    Duration heartbeatInterval,
    boolean heartbeat,
    Duration publishTimeout,
    int maxMessageBytes,
    Duration maxNackDelay) {

  /** SQS's classic limit for body plus attributes; raise it for queues that allow 1 MiB. */
  static final int DEFAULT_MAX_MESSAGE_BYTES = 256 * 1024;

  static SqsSettings from(Map<String, String> raw) {
    BrokerConfig c = BrokerConfig.of(SqsBrokerProvider.NAME, raw);
    String region = c.optional("region").orElse(null);
    URI endpoint = null;
    if (c.has("endpoint")) {
      String value = c.required("endpoint");
      try {
        endpoint = new URI(value);
      } catch (URISyntaxException e) {
        throw c.invalid("endpoint", value, "must be a URL such as http://localhost:9324");
      }
      if (endpoint.getScheme() == null || endpoint.getHost() == null) {
        throw c.invalid("endpoint", value, "must be a URL such as http://localhost:9324");
      }
    }
    String accessKey = c.optional("access.key.id").orElse(null);
    String secretKey = c.optional("secret.access.key").orElse(null);
    if ((accessKey == null) != (secretKey == null)) {
      throw c.invalid(
          accessKey == null ? "access.key.id" : "secret.access.key",
          "",
          "needs its partner: set both keys, or neither to use the default credential chain");
    }
    // Standard queues: 10 s, because the heartbeat extends it while a delivery is unsettled; a
    // killed consumer's messages come back before a restarted server is ready. FIFO queues: 15 s,
    // because it also bounds how long a consumer may stall (a GC pause, a SIGSTOP) before its
    // in-flight messages go to another consumer while it still holds them, and the two process one
    // message group side by side; yet a killed consumer's message blocks its group until it ends
    // (30 s kept a restarted server waiting 9.5 s). A heartbeat interval set on its own keeps three
    // beats per timeout.
    Duration visibilityDefault = Duration.ofSeconds(c.bool("fifo", false) ? 15 : 10);
    if (c.has("heartbeat.interval")) {
      Duration beats =
          c.duration(
                  "heartbeat.interval",
                  Duration.ofSeconds(10),
                  Duration.ofMillis(100),
                  Duration.ofHours(12))
              .multipliedBy(3);
      if (beats.compareTo(visibilityDefault) > 0) {
        visibilityDefault =
            beats.compareTo(Duration.ofHours(12)) > 0 ? Duration.ofHours(12) : beats;
      }
    }
    Duration visibility =
        c.duration(
            "visibility.timeout", visibilityDefault, Duration.ofSeconds(1), Duration.ofHours(12));
    Duration heartbeatInterval =
        c.duration(
            "heartbeat.interval",
            visibility.dividedBy(3),
            Duration.ofMillis(100),
            Duration.ofHours(12));
    if (heartbeatInterval.compareTo(visibility) >= 0) {
      throw c.invalid(
          "heartbeat.interval",
          heartbeatInterval.toString(),
          "must be shorter than visibility.timeout " + visibility);
    }
    SqsSettings s =
        new SqsSettings(
            region,
            endpoint,
            c.bool("fifo", false),
            accessKey,
            secretKey,
            c.duration("wait.time", Duration.ofSeconds(20), Duration.ZERO, Duration.ofSeconds(20)),
            visibility,
            heartbeatInterval,
            c.bool("heartbeat", true),
            c.duration(
                "publish.timeout",
                Duration.ofSeconds(30),
                Duration.ofMillis(500),
                Duration.ofMinutes(10)),
            c.integer("max.message.bytes", DEFAULT_MAX_MESSAGE_BYTES, 1_024, 1024 * 1024),
            c.duration(
                "nack.max.delay", Duration.ofHours(12), Duration.ZERO, Duration.ofHours(12)));
    c.requireNoUnknownKeys();
    return s;
  }

  @Override
  public String toString() {
    return "SqsSettings[region="
        + region
        + ", endpoint="
        + endpoint
        + ", accessKeyId="
        + accessKeyId
        + ", secretAccessKey="
        + (secretAccessKey == null ? "none" : "(hidden)")
        + "]";
  }
}
