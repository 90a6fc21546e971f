package dev.postbox.runtime.inbox;

import dev.postbox.runtime.api.InboxListener;
import dev.postbox.runtime.db.Dialect;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Per poll, in the inbox, before the database is asked: a batch of 500 decoded deliveries (100
 * customers' keys) split into the subscription's lanes by key, then each lane's batch built: every
 * envelope checked (NUL, size, type), its front key computed, the front asked, held keys checked.
 * The front is on and empty, so every event goes on to the database, as first deliveries do. Score:
 * nanoseconds for the whole poll batch; divide by 500 for one delivery. In this package: the batch
 * step is package-private.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(1)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 5, time = 2)
public class BatchBuildCpuBenchmark {

  /** Lanes per poll batch: 1 (the default) and 4. */
  @Param({"1", "4"})
  public int lanes;

  private InboxProcessor inbox;
  private List<Delivery> poll;

  @Setup
  public void batch() {
    inbox =
        new InboxProcessor(
            null, // never reached: building the batch asks no database
            Dialect.POSTGRESQL,
            InboxSettings.of("payments")
                .withWorkers(lanes)
                .withFront(Duration.ofMinutes(10), 100_000),
            (connection, event) -> {},
            Clock.systemUTC(),
            InboxListener.NONE,
            null);
    poll = new ArrayList<>(500);
    for (int i = 0; i < 500; i++) {
      poll.add(new Decoded(event("customer-" + (i % 100))));
    }
  }

  @Benchmark
  public int buildBatch() {
    int valid = 0;
    for (List<Delivery> lane : inbox.lanes(poll, lanes)) {
      valid += inbox.batch(lane).size();
    }
    if (valid != 500) {
      throw new IllegalStateException("the batch lost events: " + valid + " of 500");
    }
    return valid;
  }

  private static Envelope event(String key) {
    return Envelope.builder()
        .id(UUID.randomUUID().toString())
        .source("urn:postbox:payments")
        .type("OrderCaptured")
        .key(key)
        .dataContentType("application/json")
        .payload("{\"orderId\":\"" + UUID.randomUUID() + "\",\"amountCents\":1999}")
        .build();
  }

  /** A delivery already decoded (decoding is measured on its own), never settled here. */
  private record Decoded(Envelope envelope) implements Delivery {
    @Override
    public int attempt() {
      return 1;
    }

    @Override
    public Map<String, String> metadata() {
      return Map.of();
    }

    @Override
    public void ack() {
      throw new IllegalStateException("a first delivery is not settled while its batch is built");
    }

    @Override
    public void nack(Duration delay) {
      throw new IllegalStateException("a first delivery is not settled while its batch is built");
    }
  }
}
