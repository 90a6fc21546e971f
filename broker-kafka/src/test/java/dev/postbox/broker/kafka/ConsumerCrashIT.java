package dev.postbox.broker.kafka;

import static dev.postbox.broker.kafka.KafkaTestSupport.event;
import static dev.postbox.broker.kafka.KafkaTestSupport.open;
import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.broker.kafka.testing.KafkaTestBroker;
import dev.postbox.spi.Broker;
import dev.postbox.spi.Consumer;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.Subscription;
import dev.postbox.spi.testing.CrashVictim;
import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * A consumer in another JVM takes deliveries and is killed with SIGKILL before acking: no close, no
 * commit, no leave-group. Its unacked deliveries reach the other member of the group once the dead
 * member's session times out.
 */
class ConsumerCrashIT {

  private static final KafkaTestBroker KAFKA = KafkaTestBroker.shared();

  @Test
  void unackedDeliveriesOfAKilledConsumerReachTheOtherMember() throws Exception {
    String topic = "crash-" + UUID.randomUUID();
    String group = "crash-group";
    KAFKA.createTopic(topic, 2);
    Set<String> sent = new HashSet<>();
    try (Broker broker = open(KAFKA.bootstrapServers())) {
      for (int i = 0; i < 20; i++) {
        Envelope e = event("k" + i, i);
        sent.add(e.id());
        broker.publisher().publish(topic, e);
      }

      Set<String> held =
          CrashVictim.holdAndKill(
              "kafka",
              Map.of(
                  "bootstrap.servers", KAFKA.bootstrapServers(),
                  "kafka.consumer.session.timeout.ms", "3000",
                  "kafka.consumer.heartbeat.interval.ms", "500"),
              topic,
              group,
              20);
      assertThat(held).as("the victim held every delivery unacked").isEqualTo(sent);

      Consumer survivor = broker.subscribe(Subscription.of(topic, group));
      Set<String> received = new HashSet<>();
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (!received.containsAll(held) && System.nanoTime() < deadline) {
        for (Delivery d : survivor.poll(50, Duration.ofMillis(500))) {
          received.add(d.envelope().id());
          d.ack();
        }
      }
      survivor.close();
      assertThat(received).as("the killed member's unacked deliveries").containsAll(held);
    }
  }
}
