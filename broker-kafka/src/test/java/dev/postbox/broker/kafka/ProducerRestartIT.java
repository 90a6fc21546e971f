package dev.postbox.broker.kafka;

import static dev.postbox.broker.kafka.KafkaTestSupport.event;
import static dev.postbox.broker.kafka.KafkaTestSupport.open;
import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.broker.kafka.testing.KafkaTestBroker;
import dev.postbox.spi.Broker;
import dev.postbox.spi.BrokerException;
import dev.postbox.spi.Consumer;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.Subscription;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The broker restarts while a publisher is busy. The idempotent producer retries through the outage
 * within the publish timeout: every publish succeeds, and every acknowledged event is there
 * afterwards.
 */
class ProducerRestartIT {

  @Test
  void publishingThroughABrokerRestartLosesNothing() throws Exception {
    try (KafkaTestBroker kafka = KafkaTestBroker.start();
        Broker broker = open(kafka.bootstrapServers(), "publish.timeout", "60s")) {
      String topic = "restart";
      kafka.createTopic(topic, 2);
      Set<String> acknowledged = ConcurrentHashMap.newKeySet();
      List<BrokerException> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
      CountDownLatch halfway = new CountDownLatch(1);
      Thread publisher =
          new Thread(
              () -> {
                for (int i = 0; i < 1_000; i++) {
                  Envelope e = event("k" + (i % 10), i);
                  try {
                    broker.publisher().publish(topic, e);
                    acknowledged.add(e.id());
                  } catch (BrokerException failure) {
                    failures.add(failure);
                  }
                  if (i == 300) {
                    halfway.countDown();
                  }
                }
              },
              "publisher");
      publisher.start();
      assertThat(halfway.await(60, TimeUnit.SECONDS)).isTrue();
      kafka.restart();
      publisher.join(TimeUnit.MINUTES.toMillis(3));
      assertThat(publisher.isAlive()).isFalse();

      assertThat(failures).as("publish failures through the restart").isEmpty();
      assertThat(acknowledged).hasSize(1_000);

      Consumer consumer = broker.subscribe(Subscription.of(topic, "verify"));
      Set<String> stored = new HashSet<>();
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (!stored.containsAll(acknowledged) && System.nanoTime() < deadline) {
        for (Delivery d : consumer.poll(500, Duration.ofMillis(500))) {
          stored.add(d.envelope().id());
          d.ack();
        }
      }
      consumer.close();
      assertThat(stored)
          .as("every acknowledged publish is on the broker")
          .containsAll(acknowledged);
    }
  }
}
