package dev.postbox.spi.testing;

import static org.awaitility.Awaitility.await;

import dev.postbox.spi.Consumer;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Runs consumers of one group side by side, each on a thread of its own, for ordering tests: every
 * delivery's payload is an integer sequence number, recorded per key in the order it arrived
 * (before its ack, since after the ack the key's next message may go to another consumer).
 */
public final class CompetingConsumers {

  private CompetingConsumers() {}

  /**
   * @param perConsumer deliveries each consumer took, in the order given
   * @param orderByKey each key's sequence numbers in arrival order
   * @param consumersByKey which consumers (by index) received each key
   */
  public record Result(
      List<Integer> perConsumer,
      Map<String, List<Integer>> orderByKey,
      Map<String, Set<Integer>> consumersByKey) {}

  /** Polls until {@code expected} deliveries arrived in all, or fails after {@code max}. */
  public static Result drain(List<Consumer> consumers, int expected, Duration max)
      throws InterruptedException, ExecutionException {
    Map<String, List<Integer>> order = new ConcurrentHashMap<>();
    Map<String, Set<Integer>> owners = new ConcurrentHashMap<>();
    AtomicInteger total = new AtomicInteger();
    AtomicBoolean done = new AtomicBoolean();
    ExecutorService pool = Executors.newFixedThreadPool(consumers.size());
    List<Future<Integer>> counts = new ArrayList<>();
    try {
      for (int i = 0; i < consumers.size(); i++) {
        int index = i;
        Consumer consumer = consumers.get(i);
        counts.add(
            pool.submit(
                () -> {
                  int n = 0;
                  while (!done.get()) {
                    for (Delivery d : consumer.poll(50, Duration.ofMillis(100))) {
                      Envelope e = d.envelope();
                      order
                          .computeIfAbsent(
                              e.key(), k -> Collections.synchronizedList(new ArrayList<>()))
                          .add(Integer.parseInt(new String(e.payload(), StandardCharsets.UTF_8)));
                      owners
                          .computeIfAbsent(e.key(), k -> ConcurrentHashMap.newKeySet())
                          .add(index);
                      d.ack();
                      total.incrementAndGet();
                      n++;
                    }
                  }
                  return n;
                }));
      }
      await().atMost(max).until(() -> total.get() >= expected);
    } finally {
      done.set(true);
      pool.shutdown();
    }
    List<Integer> perConsumer = new ArrayList<>();
    for (Future<Integer> f : counts) {
      perConsumer.add(f.get());
    }
    return new Result(perConsumer, order, owners);
  }
}
