package dev.postbox.broker.kafka;

import static dev.postbox.broker.kafka.KafkaTestSupport.event;
import static dev.postbox.broker.kafka.KafkaTestSupport.open;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.broker.kafka.testing.KafkaTestBroker;
import dev.postbox.spi.Broker;
import dev.postbox.spi.Consumer;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.Subscription;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.Test;

/**
 * An instance killed with SIGKILL never leaves its group: with dynamic membership its partitions
 * wait for Kafka's {@code session.timeout.ms} (45 s by default) after it restarts. Under its member
 * name, the restarted instance takes them back at once.
 */
class StaticMembershipIT {

  private static final KafkaTestBroker KAFKA = KafkaTestBroker.shared();

  @Test
  void aRestartedMemberGetsItsPartitionsBackWithoutWaitingForTheSessionTimeout() {
    String topic = "static-" + UUID.randomUUID();
    String group = "static-group";
    KAFKA.createTopic(topic, 2);
    // The crashed incarnation: joined under the member's id, then gone without leaving.
    try (KafkaConsumer<byte[], byte[]> crashed =
        new KafkaConsumer<>(
            Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                KAFKA.bootstrapServers(),
                ConsumerConfig.GROUP_ID_CONFIG,
                group,
                ConsumerConfig.GROUP_INSTANCE_ID_CONFIG,
                KafkaBroker.staticId("m1", group, topic),
                ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG,
                ByteArrayDeserializer.class,
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG,
                ByteArrayDeserializer.class))) {
      crashed.subscribe(List.of(topic));
      await()
          .atMost(Duration.ofSeconds(30))
          .until(
              () -> {
                crashed.poll(Duration.ofMillis(100));
                return crashed.assignment().size() == 2;
              });
      crashed.close(
          CloseOptions.groupMembershipOperation(
              CloseOptions.GroupMembershipOperation.REMAIN_IN_GROUP));
    }
    try (Broker restarted = open(KAFKA.bootstrapServers())) {
      Envelope e = event("k", 1);
      restarted.publisher().publish(topic, e);
      Consumer consumer = restarted.subscribe(Subscription.of(topic, group).withMember("m1"));
      List<Delivery> got = new ArrayList<>();
      long started = System.nanoTime();
      await()
          .atMost(Duration.ofSeconds(10)) // far below the 45 s session timeout
          .until(
              () -> {
                got.addAll(consumer.poll(10, Duration.ofMillis(200)));
                return !got.isEmpty();
              });
      assertThat(got.get(0).envelope().id()).isEqualTo(e.id());
      System.out.println(
          "restarted member's first delivery after "
              + Duration.ofNanos(System.nanoTime() - started).toMillis()
              + " ms");
      consumer.close();
    }
  }
}
