package dev.postbox.runtime.inbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.runtime.db.DataAccessException;
import dev.postbox.spi.Consumer;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.RetriableBrokerException;
import dev.postbox.spi.Subscription;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
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
    return loop(first, subscribe, deliveries -> batches.incrementAndGet());
  }

  private ConsumerLoop loop(
      Consumer first,
      Supplier<Consumer> subscribe,
      java.util.function.Consumer<List<Delivery>> process) {
    return new ConsumerLoop(
        "d/g", first, subscribe, process, Duration.ofSeconds(30), Duration.ZERO, now::get);
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
  void batchesThatCannotBeProcessedAreReportedButDoNotResubscribe() throws InterruptedException {
    AtomicInteger subscribes = new AtomicInteger();
    AtomicInteger attempts = new AtomicInteger();
    StandIn working = new StandIn(false);
    CountDownLatch held = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    // The database is down for 60 s of the test's clock (each poll moves it one second).
    ConsumerLoop loop =
        loop(
            working,
            () -> {
              subscribes.incrementAndGet();
              return new StandIn(false);
            },
            deliveries -> {
              int attempt = attempts.incrementAndGet();
              if (attempt == 41) {
                held.countDown(); // 40 failed batches behind it: hold the loop to look at it
                awaitQuietly(release);
              }
              if (attempt <= 60) {
                throw new DataAccessException(
                    "database unavailable", new java.sql.SQLException("connection refused"));
              }
              batches.incrementAndGet();
            });
    CompletableFuture<Void> running = CompletableFuture.runAsync(loop);
    assertThat(held.await(10, TimeUnit.SECONDS))
        .as("attempts %s, subscribes %s", attempts, subscribes)
        .isTrue();
    assertThat(loop.failingFor()).as("reported while it lasts").isPresent();
    assertThat(loop.failingFor().get()).isGreaterThan(Duration.ofSeconds(30));
    release.countDown();
    await().atMost(Duration.ofSeconds(10)).until(() -> batches.get() > 0);
    assertThat(subscribes.get()).as("the consumer itself was fine").isZero();
    assertThat(working.closed).isFalse();
    assertThat(loop.failingFor()).isEmpty();
    assertThat(loop.lastError()).contains("database unavailable");
    loop.close();
    running.join();
  }

  @Test
  void anIllegalStateExceptionFromABatchDoesNotEndTheLoop() {
    // From a poll it means "consumer closed"; from the inbox's processing it means nothing of
    // the kind, and once ended the loop for good.
    AtomicInteger attempts = new AtomicInteger();
    ConsumerLoop loop =
        loop(
            new StandIn(false),
            () -> new StandIn(false),
            deliveries -> {
              if (attempts.incrementAndGet() <= 3) {
                throw new IllegalStateException("not now");
              }
              batches.incrementAndGet();
            });
    CompletableFuture<Void> running = CompletableFuture.runAsync(loop);
    await().atMost(Duration.ofSeconds(10)).until(() -> batches.get() > 0 || running.isDone());
    assertThat(running).isNotDone();
    loop.close();
    running.join();
  }

  private static void awaitQuietly(CountDownLatch latch) {
    try {
      latch.await(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
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

  /** A delivery that counts its settlements. */
  private static final class Counted implements Delivery {
    final String id;
    final AtomicInteger acks = new AtomicInteger();
    final AtomicInteger nacks = new AtomicInteger();

    Counted(String id) {
      this.id = id;
    }

    @Override
    public dev.postbox.spi.Envelope envelope() {
      return dev.postbox.spi.Envelope.builder()
          .source("urn:t")
          .type("T")
          .key("k")
          .id(id)
          .payload(id)
          .build();
    }

    @Override
    public int attempt() {
      return 1;
    }

    @Override
    public java.util.Map<String, String> metadata() {
      return java.util.Map.of();
    }

    @Override
    public void ack() {
      acks.incrementAndGet();
    }

    @Override
    public void nack(Duration delay) {
      nacks.incrementAndGet();
    }
  }

  @Test
  void whileTheDatabaseIsDownTheLoopPausesOnTheUnsettledDeliveriesInOrderAndResumesWithThem()
      throws Exception {
    Counted first = new Counted("e1");
    Counted second = new Counted("e2");
    Counted third = new Counted("e3");
    AtomicInteger polls = new AtomicInteger();
    Consumer broker =
        new StandIn(false) {
          @Override
          public List<Delivery> poll(int maxDeliveries, Duration timeout) {
            if (closed) {
              throw new IllegalStateException("closed");
            }
            return polls.incrementAndGet() == 1 ? List.of(first, second, third) : List.of();
          }
        };
    java.util.concurrent.atomic.AtomicBoolean down =
        new java.util.concurrent.atomic.AtomicBoolean(true);
    List<List<String>> handed = new java.util.concurrent.CopyOnWriteArrayList<>();
    ConsumerLoop loop =
        loop(
            broker,
            () -> broker,
            deliveries -> {
              handed.add(deliveries.stream().map(d -> d.envelope().id()).toList());
              if (handed.size() == 1) {
                deliveries.get(0).ack(); // the first was written before the database went down
              }
              if (down.get()) {
                throw new InboxUnavailableException(
                    "d/g", new IllegalStateException("connection refused"));
              }
              deliveries.forEach(Delivery::ack);
            });
    CompletableFuture<Void> running = CompletableFuture.runAsync(loop);
    try {
      await().atMost(Duration.ofSeconds(10)).until(() -> handed.size() >= 5);
      assertThat(polls.get()).as("no poll past the unsettled deliveries").isEqualTo(1);
      List<List<String>> seen = List.copyOf(handed);
      assertThat(seen.get(0)).containsExactly("e1", "e2", "e3");
      assertThat(seen.subList(1, seen.size()))
          .allSatisfy(b -> assertThat(b).containsExactly("e2", "e3"));
      assertThat(List.of(second.nacks.get(), third.nacks.get(), second.acks.get()))
          .as("neither nacked nor acked while the database is down")
          .containsOnly(0);
      assertThat(loop.failingFor()).isPresent();
      down.set(false);
      await().atMost(Duration.ofSeconds(10)).until(() -> third.acks.get() == 1);
      await().atMost(Duration.ofSeconds(10)).until(() -> polls.get() > 1);
      assertThat(List.of(first.acks.get(), second.acks.get(), third.acks.get())).containsOnly(1);
      assertThat(loop.failingFor()).isEmpty();
    } finally {
      loop.close();
      running.get(10, TimeUnit.SECONDS);
    }
  }
}
