package dev.postbox.broker.artemis;

import dev.postbox.spi.Broker;
import dev.postbox.spi.BrokerProvider;
import java.util.Map;

/**
 * The ActiveMQ Artemis adapter, registered with {@link java.util.ServiceLoader} as {@value #NAME}.
 * See {@code docs/brokers/artemis.md} for the semantics and every configuration key.
 */
public final class ArtemisBrokerProvider implements BrokerProvider {

  public static final String NAME = "artemis";

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public Broker open(Map<String, String> config) {
    return ArtemisBroker.open(ArtemisSettings.from(config));
  }
}
