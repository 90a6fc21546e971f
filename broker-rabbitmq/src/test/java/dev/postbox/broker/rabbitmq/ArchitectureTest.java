package dev.postbox.broker.rabbitmq;

import dev.postbox.spi.testing.AdapterArchitecture;
import org.junit.jupiter.api.Test;

class ArchitectureTest {

  @Test
  void dependsOnTheSpiOnly() {
    AdapterArchitecture.check("dev.postbox.broker.rabbitmq");
  }
}
