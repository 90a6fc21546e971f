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

  @Test
  void twoLiveInstancesWithOneMemberNameFallBackToADynamicMemberInsteadOfFencingForever() {
    // Two instances given the same member name (e.g. one host name and one server folder): the
    // second fences the first. The first must then rejoin as a dynamic member, not fence back.
    String topic = "static-dup-" + UUID.randomUUID();
    String group = "static-dup";
    KAFKA.createTopic(topic, 2);
    try (Broker a = open(KAFKA.bootstrapServers());
        Broker b = open(KAFKA.bootstrapServers())) {
      Subscription sameName = Subscription.of(topic, group).withMember("same-host-same-folder");
      Consumer first = a.subscribe(sameName);
      first.poll(10, Duration.ofSeconds(3));
      Consumer second = b.subscribe(sameName);
      List<RuntimeException> failures = new ArrayList<>();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(
              () -> {
                second.poll(10, Duration.ofMillis(200));
                try {
                  first.poll(10, Duration.ofMillis(200));
                } catch (RuntimeException fenced) {
                  failures.add(fenced);
                }
                return !failures.isEmpty();
              });
      assertThat(failures.get(0)).hasMessageContaining("postbox.member-name");
      first.close();
      Consumer again = a.subscribe(sameName); // what the inbox's loop does after a failure
      List<Envelope> sent = new ArrayList<>();
      for (int i = 0; i < 20; i++) {
        Envelope e = event("k" + i, i);
        sent.add(e);
      }
      a.publisher().publishAll(topic, sent);
      java.util.Set<String> got = new java.util.HashSet<>();
      await()
          .atMost(Duration.ofSeconds(60))
          .until(
              () -> {
                for (Consumer c : List.of(again, second)) {
                  for (Delivery d : c.poll(50, Duration.ofMillis(200))) {
                    got.add(d.envelope().id());
                    d.ack();
                  }
                }
                return got.size() == sent.size();
              });
      again.close();
      second.close();
    }
  }
}
