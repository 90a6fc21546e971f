package dev.postbox.payments;

import dev.postbox.broker.kafka.testing.KafkaTestBroker;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/** The payments app with the Kafka adapter against a real Kafka broker (KRaft, in this JVM). */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PaymentsOnKafkaIT {

  private final KafkaTestBroker kafka = KafkaTestBroker.shared();
  private VariantServer server;

  @BeforeAll
  void start() {
    kafka.createTopic("orders", 4);
    kafka.createTopic("payments", 4);
    server =
        new VariantServer(
            "kafka",
            Map.of(
                "postbox.broker", "kafka",
                "postbox.broker.bootstrap.servers", kafka.bootstrapServers(),
                "payments.embedded-artemis", "false"));
    server.start();
  }

  @AfterAll
  void stop() {
    if (server != null) {
      server.close();
    }
  }

  @Test
  void aHundredOrdersGiveExactlyAHundredChargesAndAHundredNotifications() throws Exception {
    HundredOrders.placeAndAwait(new PaymentsApi(server.url()));
  }
}
