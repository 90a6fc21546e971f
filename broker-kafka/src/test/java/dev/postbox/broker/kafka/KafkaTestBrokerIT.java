package dev.postbox.broker.kafka;

import dev.postbox.broker.kafka.testing.KafkaTestBrokers;
import dev.postbox.spi.testing.TestBroker;
import dev.postbox.spi.testing.TestBrokerKit;

/** The Kafka test broker that other modules take through ServiceLoader. */
class KafkaTestBrokerIT extends TestBrokerKit {
  @Override
  protected TestBroker.Provider provider() {
    return new KafkaTestBrokers();
  }
}
