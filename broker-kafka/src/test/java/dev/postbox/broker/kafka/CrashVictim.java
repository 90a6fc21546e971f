package dev.postbox.broker.kafka;

import dev.postbox.spi.Broker;
import dev.postbox.spi.Consumer;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Subscription;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

/**
 * A consumer process for {@link ConsumerCrashIT}: it takes {@code count} deliveries, never acks
 * them, prints their ids, then waits to be killed with SIGKILL.
 *
 * <p>Arguments: bootstrap servers, topic, group, count.
 */
public final class CrashVictim {

  private CrashVictim() {}

  public static void main(String[] args) throws InterruptedException {
    Broker broker =
        KafkaTestSupport.open(
            args[0],
            "kafka.consumer.session.timeout.ms",
            "3000",
            "kafka.consumer.heartbeat.interval.ms",
            "500");
    Consumer consumer = broker.subscribe(Subscription.of(args[1], args[2]));
    int count = Integer.parseInt(args[3]);
    List<String> held = new ArrayList<>();
    while (held.size() < count) {
      for (Delivery d : consumer.poll(count - held.size(), Duration.ofMillis(500))) {
        held.add(d.envelope().id());
      }
    }
    System.out.println("HOLDING " + String.join(",", held));
    System.out.flush();
    new CountDownLatch(1).await(); // until SIGKILL
  }
}
