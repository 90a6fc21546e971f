package dev.postbox.runtime.inbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.spi.Consumer;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.RetriableBrokerException;
import dev.postbox.spi.Subscription;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/** The poll loop's recovery logic, on stand-in consumers and a clock the test moves. */
class ConsumerLoopTest {

  private final AtomicLong now = new AtomicLong(1);
  private final AtomicInteger batches = new AtomicInteger();

  /** A consumer whose polls move the clock one second and then fail or return an empty batch. */
  private class StandIn implements Consumer {
    final boolean dead;
    volatile boolean closed;

    StandIn(boolean dead) {
      this.dead = dead;
    }

    @Override
    public List<Delivery> poll(int maxDeliveries, Duration timeout) {
      if (closed) {
        throw new IllegalStateException("closed");
      }
      now.addAndGet(Duration.ofSeconds(1).toNanos());
      if (dead) {
        throw new RetriableBrokerException("poll: the session is gone");
      }
      return List.of();
    }

    @Override
    public Subscription subscription() {
      return Subscription.of("d", "g");
    }

    @Override
    public void close() {
      closed = true;
    }
  }

  private ConsumerLoop loop(Consumer first, Supplier<Consumer> subscribe) {
    return new ConsumerLoop(
        "d/g",
        first,
        subscribe,
        deliveries -> batches.incrementAndGet(),
        Duration.ofSeconds(30),
        Duration.ZERO,
        now::get);
  }

  @Test
  void aConsumerThatKeepsFailingIsReplacedAfterTheStretchAndTheLoopRecovers() {
    StandIn dead = new StandIn(true);
    StandIn fresh = new StandIn(false);
    AtomicInteger subscribes = new AtomicInteger();
    ConsumerLoop loop =
        loop(
            dead,
            () -> {
              subscribes.incrementAndGet();
              return fresh;
            });
    CompletableFuture<Void> running = CompletableFuture.runAsync(loop);
    await().atMost(Duration.ofSeconds(10)).until(() -> batches.get() > 3);
    assertThat(dead.closed).as("the dead consumer was closed").isTrue();
    assertThat(subscribes.get()).isEqualTo(1);
    assertThat(loop.failingFor()).as("healthy again").isEmpty();
    assertThat(loop.lastError()).contains("the session is gone");
    loop.close();
    running.join();
    assertThat(fresh.closed).isTrue();
  }

  @Test
  void shortFailuresDoNotResubscribeAndAreReportedWhileTheyLast() {
    Deque<Boolean> fails = new ArrayDeque<>(List.of(true, true, true, false));
    AtomicInteger subscribes = new AtomicInteger();
    Consumer flaky =
        new StandIn(false) {
          @Override
          public List<Delivery> poll(int maxDeliveries, Duration timeout) {
            Boolean fail = fails.poll();
            if (fail != null && fail) {
              now.addAndGet(Duration.ofSeconds(1).toNanos());
              throw new RetriableBrokerException("blip");
            }
            return super.poll(maxDeliveries, timeout);
          }
        };
    ConsumerLoop loop =
        loop(
            flaky,
            () -> {
              subscribes.incrementAndGet();
              return new StandIn(false);
            });
    CompletableFuture<Void> running = CompletableFuture.runAsync(loop);
    await().atMost(Duration.ofSeconds(10)).until(() -> batches.get() > 0);
    assertThat(subscribes.get()).isZero();
    assertThat(loop.failingFor()).isEmpty();
    loop.close();
    running.join();
  }

  @Test
  void aFailedResubscribeIsRetriedAtTheNextStretchWithoutEndingTheLoop() {
    StandIn dead = new StandIn(true);
    StandIn fresh = new StandIn(false);
    AtomicInteger subscribes = new AtomicInteger();
    ConsumerLoop loop =
        loop(
            dead,
            () -> {
              if (subscribes.incrementAndGet() == 1) {
                throw new RetriableBrokerException("subscribe: broker still down");
              }
              return fresh;
            });
    CompletableFuture<Void> running = CompletableFuture.runAsync(loop);
    // the closed consumer's polls throw IllegalStateException; the loop must not die of it
    await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> loop.failingFor().isPresent() && subscribes.get() == 1);
    // move the clock past the next stretch: the loop's own polls of the closed consumer don't
    now.addAndGet(Duration.ofSeconds(31).toNanos());
    await().atMost(Duration.ofSeconds(10)).until(() -> batches.get() > 0);
    assertThat(subscribes.get()).isEqualTo(2);
    assertThat(running).isNotDone();
    loop.close();
    running.join();
  }

  @Test
  void aConsumerClosedBySomeoneElseEndsTheLoop() {
    StandIn closedElsewhere = new StandIn(false);
    closedElsewhere.close();
    ConsumerLoop loop = loop(closedElsewhere, () -> new StandIn(false));
    CompletableFuture<Void> running = CompletableFuture.runAsync(loop);
    await().atMost(Duration.ofSeconds(10)).until(running::isDone);
    assertThat(running).isCompletedExceptionally();
  }
}
