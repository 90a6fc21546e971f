package dev.postbox.broker.kafka;

import static dev.postbox.broker.kafka.KafkaTestSupport.event;
import static dev.postbox.broker.kafka.KafkaTestSupport.offset;
import static dev.postbox.broker.kafka.KafkaTestSupport.open;
import static dev.postbox.broker.kafka.KafkaTestSupport.partition;
import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.broker.kafka.testing.KafkaTestBroker;
import dev.postbox.spi.Broker;
import dev.postbox.spi.Consumer;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.Subscription;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * 10,000 deliveries over 8 partitions, acked in random order with a random few left unacked. After
 * a restart exactly the unacked tail of each partition comes back: the lowest unacked offset and
 * everything after it. Nothing is lost, and nothing before that point is redelivered.
 */
class OutOfOrderAcksIT {

  private static final KafkaTestBroker KAFKA = KafkaTestBroker.shared();
  private static final int MESSAGES = 10_000;
  private static final int PARTITIONS = 8;

  @Test
  void restartRedeliversExactlyTheUnackedTail() {
    String topic = "ooo-" + UUID.randomUUID();
    String group = "ooo-group";
    KAFKA.createTopic(topic, PARTITIONS);
    Random random = new Random(42);

    try (Broker broker = open(KAFKA.bootstrapServers())) {
      List<Envelope> all = new ArrayList<>();
      for (int i = 0; i < MESSAGES; i++) {
        all.add(event("key-" + (i % 200), i));
      }
      for (int from = 0; from < MESSAGES; from += 1_000) {
        broker.publisher().publishAll(topic, all.subList(from, from + 1_000));
      }

      Consumer first = broker.subscribe(new Subscription(topic, group, MESSAGES));
      List<Delivery> got = new ArrayList<>();
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (got.size() < MESSAGES && System.nanoTime() < deadline) {
        got.addAll(first.poll(1_000, Duration.ofMillis(500)));
      }
      assertThat(got).hasSize(MESSAGES);

      List<Delivery> shuffled = new ArrayList<>(got);
      Collections.shuffle(shuffled, random);
      Set<Delivery> unacked = new HashSet<>(shuffled.subList(0, 25));
      Map<Integer, Long> lowestUnacked = new HashMap<>();
      for (Delivery d : unacked) {
        lowestUnacked.merge(partition(d), offset(d), Math::min);
      }
      for (Delivery d : shuffled) {
        if (!unacked.contains(d)) {
          d.ack();
        }
      }
      Set<String> expectedTail = new HashSet<>();
      for (Delivery d : got) {
        Long from = lowestUnacked.get(partition(d));
        if (from != null && offset(d) >= from) {
          expectedTail.add(d.envelope().id());
        }
      }
      first.close();

      Consumer second = broker.subscribe(new Subscription(topic, group, MESSAGES));
      Set<String> redelivered = new HashSet<>();
      Set<String> unackedIds = new HashSet<>();
      unacked.forEach(d -> unackedIds.add(d.envelope().id()));
      deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (!redelivered.containsAll(expectedTail) && System.nanoTime() < deadline) {
        for (Delivery d : second.poll(1_000, Duration.ofMillis(500))) {
          redelivered.add(d.envelope().id());
          d.ack();
        }
      }
      // Anything beyond the tail would have been fetched together with it; give it a moment.
      long quietUntil = System.nanoTime() + Duration.ofSeconds(2).toNanos();
      while (System.nanoTime() < quietUntil) {
        for (Delivery d : second.poll(1_000, Duration.ofMillis(200))) {
          redelivered.add(d.envelope().id());
          d.ack();
        }
      }
      second.close();

      assertThat(redelivered).as("every unacked delivery came back").containsAll(unackedIds);
      assertThat(redelivered).as("exactly the unacked tail came back").isEqualTo(expectedTail);
      assertThat(expectedTail.size())
          .as("the tail is a small part of the whole")
          .isLessThan(MESSAGES);
    }
  }
}
