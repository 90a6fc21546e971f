package dev.postbox.payments;

import dev.postbox.broker.sqs.testing.ElasticMqTestBroker;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/** The payments app with the SQS adapter against ElasticMQ (standard queues, in this JVM). */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PaymentsOnSqsIT {

  private final ElasticMqTestBroker sqs = ElasticMqTestBroker.shared();
  private VariantServer server;

  @BeforeAll
  void start() {
    sqs.createQueue("orders");
    sqs.createQueue("payments");
    Map<String, String> variables = new HashMap<>();
    sqs.config("fifo", "false").forEach((k, v) -> variables.put("postbox.broker." + k, v));
    variables.put("postbox.broker", "sqs");
    variables.put("payments.embedded-artemis", "false");
    server = new VariantServer("sqs", variables);
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
