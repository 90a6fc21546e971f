package dev.postbox.broker.artemis;

import dev.postbox.broker.artemis.testing.ArtemisTestBrokers;
import dev.postbox.spi.testing.TestBroker;
import dev.postbox.spi.testing.TestBrokerKit;

/** The Artemis test broker that other modules take through ServiceLoader. */
class ArtemisTestBrokerIT extends TestBrokerKit {
  @Override
  protected TestBroker.Provider provider() {
    return new ArtemisTestBrokers();
  }
}
