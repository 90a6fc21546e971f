package dev.postbox.broker.sqs;

import dev.postbox.spi.Broker;
import dev.postbox.spi.BrokerProvider;
import java.util.Map;

/**
 * The Amazon SQS adapter, registered with {@link java.util.ServiceLoader} as {@value #NAME}. See
 * {@code docs/brokers/sqs.md} for the semantics and every configuration key.
 */
public final class SqsBrokerProvider implements BrokerProvider {

  public static final String NAME = "sqs";

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public Broker open(Map<String, String> config) {
    return SqsBroker.open(SqsSettings.from(config));
  }
}
