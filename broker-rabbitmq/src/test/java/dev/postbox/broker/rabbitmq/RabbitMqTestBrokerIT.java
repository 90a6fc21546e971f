package dev.postbox.broker.rabbitmq;

import dev.postbox.broker.rabbitmq.testing.RabbitMqTestBrokers;
import dev.postbox.spi.testing.TestBroker;
import dev.postbox.spi.testing.TestBrokerKit;

/** The RabbitMQ test broker that other modules take through ServiceLoader. */
class RabbitMqTestBrokerIT extends TestBrokerKit {
  @Override
  protected TestBroker.Provider provider() {
    return new RabbitMqTestBrokers();
  }
}
