package dev.postbox.spi.testing;

import dev.postbox.spi.Broker;
import dev.postbox.spi.BrokerConfig;
import dev.postbox.spi.BrokerProvider;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Registers the {@link ReferenceBroker} as {@code reference}, for tests that open brokers by name.
 *
 * <p>Keys: {@code instance} (optional): brokers opened with the same instance name share one
 * in-memory broker, so a publisher and a consumer opened separately see each other; {@code
 * max-message-bytes} (optional).
 */
public final class ReferenceBrokerProvider implements BrokerProvider {

  public static final String NAME = "reference";

  private static final Map<String, ReferenceBroker> INSTANCES = new ConcurrentHashMap<>();

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public Broker open(Map<String, String> config) {
    BrokerConfig c = BrokerConfig.of(NAME, config);
    String instance = c.optional("instance").orElse(null);
    int maxBytes =
        c.integer(
            "max-message-bytes", ReferenceBroker.DEFAULT_MAX_MESSAGE_BYTES, 1, Integer.MAX_VALUE);
    c.requireNoUnknownKeys();
    if (instance == null) {
      return ReferenceBroker.withMaxMessageBytes(maxBytes);
    }
    return INSTANCES.computeIfAbsent(instance, i -> ReferenceBroker.withMaxMessageBytes(maxBytes));
  }
}
