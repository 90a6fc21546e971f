package dev.postbox.broker.kafka;

import dev.postbox.spi.Broker;
import dev.postbox.spi.Brokers;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

/** Small helpers shared by this module's integration tests. */
final class KafkaTestSupport {

  private KafkaTestSupport() {}

  static Broker open(String bootstrap, String... extra) {
    Map<String, String> config = new HashMap<>();
    config.put("bootstrap.servers", bootstrap);
    config.put("publish.timeout", "30s");
    for (int i = 0; i < extra.length; i += 2) {
      config.put(extra[i], extra[i + 1]);
    }
    return Brokers.open("kafka", config);
  }

  static Envelope event(String key, int n) {
    return Envelope.builder()
        .source("urn:postbox:kafka-it")
        .type("TestEvent")
        .key(key)
        .payload(("event-" + n).getBytes(StandardCharsets.UTF_8))
        .build();
  }

  /** {@code partition:offset} of a delivery. */
  static String position(Delivery d) {
    return d.metadata().get("partition") + ":" + d.metadata().get("offset");
  }

  static int partition(Delivery d) {
    return Integer.parseInt(d.metadata().get("partition"));
  }

  static long offset(Delivery d) {
    return Long.parseLong(d.metadata().get("offset"));
  }
}
