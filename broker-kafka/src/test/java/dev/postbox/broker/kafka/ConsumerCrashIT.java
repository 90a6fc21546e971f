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
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
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

      Process victim =
          new ProcessBuilder(
                  Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                  "-cp",
                  System.getProperty("java.class.path"),
                  CrashVictim.class.getName(),
                  KAFKA.bootstrapServers(),
                  topic,
                  group,
                  "20")
              .redirectErrorStream(true)
              .start();
      Set<String> held;
      try {
        held = awaitHolding(victim);
      } finally {
        victim.destroyForcibly(); // SIGKILL on Unix: the consumer gets no chance to clean up
        victim.waitFor(30, TimeUnit.SECONDS);
      }
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

  private static Set<String> awaitHolding(Process victim) throws Exception {
    CompletableFuture<Set<String>> holding =
        CompletableFuture.supplyAsync(
            () -> {
              List<String> output = new ArrayList<>();
              try (BufferedReader out =
                  new BufferedReader(
                      new InputStreamReader(victim.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = out.readLine()) != null) {
                  if (line.startsWith("HOLDING ")) {
                    return new HashSet<>(List.of(line.substring(8).split(",")));
                  }
                  output.add(line);
                }
              } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
              }
              throw new IllegalStateException("victim exited without holding: " + output);
            });
    return holding.get(60, TimeUnit.SECONDS);
  }
}
