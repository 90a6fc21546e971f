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
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/**
 * A second member joins while the first holds a batch unacked. The rebalance takes the first
 * member's partitions (the eager range assignor revokes all of them), so its held deliveries are
 * dropped: acking them afterwards must change nothing, and they must be processed again.
 */
class RebalanceIT {

  private static final KafkaTestBroker KAFKA = KafkaTestBroker.shared();

  @Test
  void lateAcksAfterARebalanceAreIgnoredAndNothingIsLost() throws Exception {
    String topic = "rebalance-" + UUID.randomUUID();
    String group = "rebalance-group";
    KAFKA.createTopic(topic, 4);
    String[] eager = {
      "kafka.consumer.partition.assignment.strategy",
      "org.apache.kafka.clients.consumer.RangeAssignor"
    };
    Set<String> sent = new HashSet<>();
    try (Broker a = open(KAFKA.bootstrapServers(), eager);
        Broker b = open(KAFKA.bootstrapServers(), eager)) {
      List<Envelope> batch = new ArrayList<>();
      for (int i = 0; i < 400; i++) {
        Envelope e = event("k" + (i % 40), i);
        batch.add(e);
        sent.add(e.id());
      }
      a.publisher().publishAll(topic, batch);

      Consumer first = a.subscribe(new Subscription(topic, group, 100));
      List<Delivery> held = new ArrayList<>();
      long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      while (held.size() < 100 && System.nanoTime() < deadline) {
        held.addAll(first.poll(100 - held.size(), Duration.ofMillis(200)));
      }
      assertThat(held).hasSize(100);

      // The second member joins mid-batch; both keep polling so the rebalance completes.
      Consumer second = b.subscribe(Subscription.of(topic, group));
      Set<String> processed = new HashSet<>();
      List<Delivery> secondFirstBatch = new ArrayList<>();
      deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      while (secondFirstBatch.isEmpty() && System.nanoTime() < deadline) {
        // The first member is at its in-flight limit until the rebalance drops its batch; what
        // it receives after that is new work, processed like any other.
        for (Delivery d : first.poll(1, Duration.ofMillis(100))) {
          processed.add(d.envelope().id());
          d.ack();
        }
        secondFirstBatch.addAll(second.poll(50, Duration.ofMillis(100)));
      }
      assertThat(secondFirstBatch).as("the new member got partitions").isNotEmpty();

      // Too late: these deliveries were revoked. The acks must be ignored.
      held.forEach(Delivery::ack);
      Set<String> heldIds = new HashSet<>();
      held.forEach(d -> heldIds.add(d.envelope().id()));

      for (Delivery d : secondFirstBatch) {
        processed.add(d.envelope().id());
        d.ack();
      }
      deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (!processed.containsAll(sent) && System.nanoTime() < deadline) {
        for (Consumer c : List.of(first, second)) {
          for (Delivery d : c.poll(100, Duration.ofMillis(100))) {
            processed.add(d.envelope().id());
            d.ack();
          }
        }
      }
      first.close();
      second.close();

      assertThat(processed).as("every event processed").containsAll(sent);
      assertThat(processed).as("held deliveries were processed again").containsAll(heldIds);
      Map<TopicPartition, OffsetAndMetadata> committed =
          KAFKA
              .admin()
              .listConsumerGroupOffsets(group)
              .partitionsToOffsetAndMetadata()
              .get(30, TimeUnit.SECONDS);
      long committedTotal = committed.values().stream().mapToLong(OffsetAndMetadata::offset).sum();
      assertThat(committedTotal).as("committed offsets cover every record").isEqualTo(400);
    }
  }
}
