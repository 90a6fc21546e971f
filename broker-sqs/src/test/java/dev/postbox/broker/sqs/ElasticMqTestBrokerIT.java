package dev.postbox.broker.sqs;

import dev.postbox.broker.sqs.testing.ElasticMqTestBrokers;
import dev.postbox.spi.testing.TestBroker;
import dev.postbox.spi.testing.TestBrokerKit;

/**
 * The SQS (ElasticMQ, standard queues) test broker that other modules take through ServiceLoader.
 */
class ElasticMqTestBrokerIT extends TestBrokerKit {
  @Override
  protected TestBroker.Provider provider() {
    return new ElasticMqTestBrokers();
  }
}
