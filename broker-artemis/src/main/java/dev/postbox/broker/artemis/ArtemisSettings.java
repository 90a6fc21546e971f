package dev.postbox.broker.artemis;

import dev.postbox.spi.BrokerConfig;
import java.time.Duration;
import java.util.Map;

/**
 * The Artemis adapter's configuration, validated before anything connects.
 *
 * @param url the Artemis connection URL; HA and failover forms such as {@code
 *     (tcp://a:61616,tcp://b:61616)?ha=true&reconnectAttempts=-1} pass through unchanged
 * @param user the user, or {@code null}
 * @param password the password, or {@code null}; never logged
 */
record ArtemisSettings(
    String url,
    String user,
    String password,
    Duration publishTimeout,
    int maxMessageBytes,
    boolean duplicateDetection,
    Duration duplicateDetectionWindow,
    Duration maxNackDelay) {

  static final int DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024;

  static ArtemisSettings from(Map<String, String> raw) {
    BrokerConfig c = BrokerConfig.of(ArtemisBrokerProvider.NAME, raw);
    String url = c.required("url");
    if (!url.matches("^\\(?(tcp|vm|ssl|udp|jgroups)://.*")) {
      throw c.invalid("url", url, "must be an Artemis URL such as tcp://localhost:61616 or vm://0");
    }
    String user = c.optional("user").orElse(null);
    String password = c.optional("password").orElse(null);
    if ((user == null) != (password == null)) {
      throw c.invalid(
          user == null ? "user" : "password",
          "",
          "needs its partner: set both user and password, or neither");
    }
    ArtemisSettings s =
        new ArtemisSettings(
            url,
            user,
            password,
            c.duration(
                "publish.timeout",
                Duration.ofSeconds(30),
                Duration.ofMillis(500),
                Duration.ofMinutes(10)),
            c.integer("max.message.bytes", DEFAULT_MAX_MESSAGE_BYTES, 1, Integer.MAX_VALUE),
            c.bool("duplicate.detection", true),
            c.duration(
                "duplicate.detection.window",
                Duration.ofMinutes(10),
                Duration.ofSeconds(1),
                Duration.ofDays(7)),
            c.duration("nack.max.delay", Duration.ofHours(1), Duration.ZERO, Duration.ofDays(7)));
    c.requireNoUnknownKeys();
    return s;
  }

  @Override
  public String toString() {
    return "ArtemisSettings[url="
        + url
        + ", user="
        + user
        + ", password="
        + (password == null ? "none" : "(hidden)")
        + "]";
  }
}
