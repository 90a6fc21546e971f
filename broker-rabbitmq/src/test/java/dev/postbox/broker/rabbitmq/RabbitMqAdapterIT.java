package dev.postbox.broker.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import dev.postbox.broker.rabbitmq.testing.LocalRabbitMq;
import dev.postbox.spi.Broker;
import dev.postbox.spi.Brokers;
import dev.postbox.spi.Consumer;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.PermanentBrokerException;
import dev.postbox.spi.RetriableBrokerException;
import dev.postbox.spi.Subscription;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** What the RabbitMQ adapter does beyond the conformance kit, against the local server. */
class RabbitMqAdapterIT {

  private static String vhost;

  @BeforeAll
  static void makeVhost() {
    vhost = LocalRabbitMq.newVhost("adapter");
  }

  @AfterAll
  static void removeVhost() {
    LocalRabbitMq.deleteVhost(vhost);
  }

  private static Broker open(String... extra) {
    Map<String, String> config = new HashMap<>(LocalRabbitMq.config(vhost));
    config.put("publish.timeout", "5s");
    config.put("claim.interval", "100ms");
    for (int i = 0; i < extra.length; i += 2) {
      config.put(extra[i], extra[i + 1]);
    }
    return Brokers.open("rabbitmq", config);
  }

  private static Envelope event(String key, String payload) {
    return Envelope.builder().source("urn:it").type("It").key(key).payload(payload).build();
  }

  private static String destination() {
    return "it-" + UUID.randomUUID().toString().substring(0, 8);
  }

  @Test
  void instancesJoiningAndLeavingShareTheShardsAndKeepEachKeysOrder() throws Exception {
    String destination = destination();
    try (Broker broker = open()) {
      Map<String, List<Integer>> seenByKey = new ConcurrentHashMap<>();
      Set<String> consumedBy = ConcurrentHashMap.newKeySet();
      AtomicBoolean stopA = new AtomicBoolean();
      AtomicBoolean stopAll = new AtomicBoolean();
      Consumer a = broker.subscribe(Subscription.of(destination, "g"));
      Thread ta = drain("a", a, seenByKey, consumedBy, stopA);
      int keys = 12;
      int perKey = 40;
      Thread tb = null;
      Consumer b = null;
      for (int n = 0; n < perKey; n++) {
        List<Envelope> batch = new ArrayList<>();
        for (int k = 0; k < keys; k++) {
          batch.add(event("key-" + k, Integer.toString(n)));
        }
        broker.publisher().publishAll(destination, batch);
        if (n == 10) {
          b = broker.subscribe(Subscription.of(destination, "g"));
          tb = drain("b", b, seenByKey, consumedBy, stopAll);
        }
        if (n == 25) {
          stopA.set(true); // a leaves: its shards go to b
          ta.join();
          a.close();
        }
        Thread.sleep(20); // spread the publishing over the joins and leaves
      }
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (System.nanoTime() < deadline
          && seenByKey.values().stream().mapToInt(l -> (int) l.stream().distinct().count()).sum()
              < keys * perKey) {
        Thread.sleep(50);
      }
      stopAll.set(true);
      tb.join();
      b.close();
      assertThat(consumedBy).as("both instances did some of the work").contains("a", "b");
      for (int k = 0; k < keys; k++) {
        List<Integer> seen = seenByKey.get("key-" + k);
        List<Integer> firstSeen = seen.stream().distinct().toList();
        assertThat(firstSeen)
            .as("key-%d in publish order, each once", k)
            .isSorted()
            .hasSize(perKey);
      }
    }
  }

  private static Thread drain(
      String name,
      Consumer consumer,
      Map<String, List<Integer>> seenByKey,
      Set<String> consumedBy,
      AtomicBoolean stop) {
    Thread t =
        new Thread(
            () -> {
              while (!stop.get()) {
                for (Delivery d : consumer.poll(20, Duration.ofMillis(100))) {
                  Envelope e = d.envelope();
                  seenByKey
                      .computeIfAbsent(
                          e.key(), k -> java.util.Collections.synchronizedList(new ArrayList<>()))
                      .add(Integer.parseInt(new String(e.payload())));
                  consumedBy.add(name);
                  d.ack();
                }
              }
            },
            "drain-" + name);
    t.start();
    return t;
  }

  @Test
  void anEventsExpiryIsAPerMessageTtlAndTheQueueDropsItUnconsumed() {
    String destination = destination();
    try (Broker broker = open("shards", "1")) {
      Envelope expired =
          event("k", "expired").toBuilder()
              .header(Envelope.EXPIRYTIME, java.time.Instant.now().minusSeconds(1).toString())
              .build();
      Envelope later =
          event("k", "later").toBuilder()
              .header(Envelope.EXPIRYTIME, java.time.Instant.now().plusSeconds(600).toString())
              .build();
      broker.publisher().publishAll(destination, List.of(expired, later));
      try (Consumer consumer = broker.subscribe(Subscription.of(destination, "g"))) {
        List<Delivery> got = receive(consumer, 1);
        assertThat(ids(got)).containsExactly(later.id());
        assertThat(got.get(0).envelope().expiryTime()).contains(later.expiryTime().orElseThrow());
        got.forEach(Delivery::ack);
      }
    }
  }

  @Test
  void aShardLockedByAnotherConnectionIsNeverTaken() throws Exception {
    // Quorum queues ignore the exclusive flag of a consumer: the lock queue is the mutex.
    String destination = destination();
    try (Broker broker = open("shards", "1")) {
      broker.publisher().publish(destination, event("k", "declares the queues"));
      Connection holder = LocalRabbitMq.connect(vhost);
      try {
        holder.createChannel().queueDeclare(destination + ".0.lock", false, true, false, null);
        try (Consumer consumer = broker.subscribe(Subscription.of(destination, "g"))) {
          long until = System.nanoTime() + Duration.ofSeconds(2).toNanos();
          while (System.nanoTime() < until) {
            assertThat(consumer.poll(10, Duration.ofMillis(200)))
                .as("deliveries of a shard another connection holds")
                .isEmpty();
          }
          holder.close(); // its lock goes with it
          assertThat(receive(consumer, 1)).hasSize(1);
        }
      } finally {
        if (holder.isOpen()) {
          holder.close();
        }
      }
    }
  }

  @Test
  void aShardIsGivenBackOnlyAfterTheCopiesItsKeysAreHeldBehindAreBack() throws Exception {
    // Two shards; the first instance drains its highest one when a second joins. A key of that
    // shard has a delayed copy out (the inbox holds its key behind it): the second instance must
    // not take the shard, and so the key's next event, before that copy is back.
    String destination = destination();
    String key = "k0";
    for (int n = 1; Shards.shardOf(key, 2) != 1; n++) {
      key = "k" + n;
    }
    try (Broker broker = open("shards", "2")) {
      Consumer a = broker.subscribe(Subscription.of(destination, "g"));
      Envelope first = event(key, "1");
      broker.publisher().publish(destination, first);
      Delivery d1 = receive(a, 1).get(0);
      d1.nack(Duration.ofSeconds(3));
      try (Consumer b = broker.subscribe(Subscription.of(destination, "g"))) {
        Envelope third = event(key, "3");
        List<String> seenByB = new ArrayList<>();
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        boolean published = false;
        while (!seenByB.contains(third.id()) && System.nanoTime() < deadline) {
          for (Delivery d : a.poll(10, Duration.ofMillis(50))) {
            d.ack(); // a keeps its other shard's work going
          }
          for (Delivery d : b.poll(10, Duration.ofMillis(50))) {
            seenByB.add(d.envelope().id());
            d.ack();
          }
          if (!published) {
            broker.publisher().publish(destination, third);
            published = true;
          }
        }
        a.close();
        assertThat(seenByB)
            .as("the held key's copy before its later event")
            .containsSubsequence(first.id(), third.id());
      }
    }
  }

  @Test
  void aKeysDelayedCopiesComeBackInTheOrderTheyWereNacked() {
    String destination = destination();
    try (Broker broker = open();
        Consumer consumer = broker.subscribe(Subscription.of(destination, "g"))) {
      Envelope head = event("k", "head");
      Envelope follower = event("k", "follower");
      broker.publisher().publishAll(destination, List.of(head, follower));
      List<Delivery> first = receive(consumer, 2);
      assertThat(ids(first)).containsExactly(head.id(), follower.id());
      first.get(0).nack(Duration.ofSeconds(2));
      first.get(1).nack(Duration.ofMillis(50)); // its own step (100 ms) would overtake the head
      List<Delivery> again = receive(consumer, 2);
      assertThat(ids(again)).containsExactly(head.id(), follower.id());
      assertThat(again.get(0).attempt()).isEqualTo(2);
      again.forEach(Delivery::ack);
    }
  }

  @Test
  void aDelayedCopyComesBackOnTimeEvenBehindABacklog() {
    copyComesBackBeforeTheBacklog(Duration.ofMillis(500));
  }

  @Test
  void aNackWithoutDelayComesBackBeforeTheBacklog() {
    // basic.nack with requeue would put it behind the backlog on a quorum queue (RabbitMQ 3.10)
    copyComesBackBeforeTheBacklog(Duration.ZERO);
  }

  private void copyComesBackBeforeTheBacklog(Duration delay) {
    // The inbox holds a key behind its failed event for a few seconds past the event's due time
    // only (KeyHolds): a copy that queued up behind the shard's backlog would come back after the
    // hold ended, and the key's later events, in that backlog, would overtake it.
    String destination = destination();
    try (Broker broker = open("shards", "1", "prefetch", "10");
        Consumer consumer = broker.subscribe(new Subscription(destination, "g", 10))) {
      Envelope head = event("held", "head");
      broker.publisher().publish(destination, head);
      Delivery first = receive(consumer, 1).get(0);
      List<Envelope> backlog = new ArrayList<>();
      for (int i = 0; i < 2_000; i++) {
        backlog.add(event("other-" + (i % 50), "backlog-" + i));
      }
      broker.publisher().publishAll(destination, backlog);
      first.nack(delay);
      // Drain at 5 ms a delivery (10 s for the backlog), as a busy inbox does: the copy, due after
      // 0.5 s, must come back long before the backlog ends.
      int before = 0;
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      boolean back = false;
      while (!back && System.nanoTime() < deadline) {
        for (Delivery d : consumer.poll(5, Duration.ofMillis(100))) {
          if (d.envelope().id().equals(head.id())) {
            back = true;
          } else {
            before++;
          }
          java.util.concurrent.locks.LockSupport.parkNanos(5_000_000); // the handler's work: 5 ms
          d.ack();
        }
      }
      assertThat(back).as("the copy came back").isTrue();
      assertThat(before).as("backlog deliveries handed out before the copy").isLessThan(500);
    }
  }

  @Test
  void delayedCopiesKeepCountingAttempts() {
    String destination = destination();
    try (Broker broker = open("queue.type", "classic");
        Consumer consumer = broker.subscribe(Subscription.of(destination, "g"))) {
      broker.publisher().publish(destination, event("k", "x"));
      List<Integer> attempts = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        Delivery d = receive(consumer, 1).get(0);
        attempts.add(d.attempt());
        if (i < 2) {
          d.nack(Duration.ofMillis(100));
        } else {
          d.ack();
        }
      }
      assertThat(attempts).containsExactly(1, 2, 3);
    }
  }

  @Test
  void aMessageReturnedUnroutableFailsPermanentlyNamingTheDestination() throws Exception {
    String destination = destination();
    try (Broker broker = open("shards", "1")) {
      broker.publisher().publish(destination, event("k", "declares the queues"));
      try (Connection c = LocalRabbitMq.connect(vhost);
          Channel ch = c.createChannel()) {
        ch.queueDelete(destination + ".0");
      }
      assertThatThrownBy(() -> broker.publisher().publish(destination, event("k", "lost?")))
          .isInstanceOf(PermanentBrokerException.class)
          .hasMessageContaining("unroutable")
          .hasMessageContaining(destination);
      // declare=true: the next publish (the relay's retry) declares the queue again
      broker.publisher().publish(destination, event("k", "after"));
    }
  }

  @Test
  void withoutDeclareAMissingQueueIsAPermanentError() {
    String destination = destination();
    try (Broker broker = open("declare", "false")) {
      assertThatThrownBy(() -> broker.publisher().publish(destination, event("k", "x")))
          .isInstanceOf(PermanentBrokerException.class)
          .hasMessageContaining(destination + ".0")
          .hasMessageContaining("does not exist");
    }
  }

  @Test
  void aQueueDeclaredWithOtherArgumentsIsAPermanentError() throws Exception {
    String destination = destination();
    try (Broker classic = open("queue.type", "classic", "shards", "2")) {
      classic.publisher().publish(destination, event("k", "declared classic"));
    }
    try (Broker quorum = open("shards", "2")) {
      assertThatThrownBy(() -> quorum.publisher().publish(destination, event("k", "x")))
          .isInstanceOf(PermanentBrokerException.class)
          .hasMessageContaining("other arguments")
          .hasMessageContaining("queue.type=quorum");
      assertThatThrownBy(() -> quorum.subscribe(Subscription.of(destination, "g")))
          .isInstanceOf(PermanentBrokerException.class);
    }
  }

  @Test
  void aServerRestartFailsRetriablyAndBothSidesRecoverOnTheirOwn() throws Exception {
    String destination = destination();
    try (Broker broker = open("recovery.max.interval", "500ms");
        Consumer consumer = broker.subscribe(Subscription.of(destination, "g"))) {
      Envelope before = event("k", "before");
      broker.publisher().publish(destination, before);
      Delivery unacked = receive(consumer, 1).get(0);
      LocalRabbitMq.stopApp();
      try {
        long started = System.nanoTime();
        assertThatThrownBy(() -> broker.publisher().publish(destination, event("k", "during")))
            .isInstanceOf(RetriableBrokerException.class);
        assertThat(Duration.ofNanos(System.nanoTime() - started))
            .isLessThan(Duration.ofSeconds(15));
        unacked.ack(); // its channel is gone: ignored, the server redelivers it
      } finally {
        LocalRabbitMq.startApp();
      }
      Envelope after = event("k", "after");
      long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      while (true) {
        try {
          broker.publisher().publish(destination, after);
          break;
        } catch (RetriableBrokerException e) {
          assertThat(System.nanoTime())
              .as("publishing again after the restart")
              .isLessThan(deadline);
          Thread.sleep(200);
        }
      }
      List<String> seen = new ArrayList<>();
      while (!seen.contains(after.id())) {
        assertThat(System.nanoTime()).as("consuming again after the restart").isLessThan(deadline);
        try {
          for (Delivery d : consumer.poll(10, Duration.ofMillis(200))) {
            seen.add(d.envelope().id());
            d.ack();
          }
        } catch (RetriableBrokerException e) {
          Thread.sleep(100); // recovering
        }
      }
      try (Connection c = LocalRabbitMq.connect(vhost);
          Channel ch = c.createChannel()) {
        assertThat(ch.queueDeclarePassive(destination + ".members").getConsumerCount())
            .as("the consumer is counted as a member again after the recovery")
            .isEqualTo(1);
      }
      assertThat(seen)
          .as("the unacked one comes back first, then the new one")
          .containsSubsequence(before.id(), after.id());
    }
  }

  private static List<Delivery> receive(Consumer consumer, int count) {
    List<Delivery> got = new ArrayList<>();
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (got.size() < count && System.nanoTime() < deadline) {
      got.addAll(consumer.poll(count - got.size(), Duration.ofMillis(200)));
    }
    assertThat(got).as("deliveries within 30 s").hasSize(count);
    return got;
  }

  private static List<String> ids(List<Delivery> deliveries) {
    return deliveries.stream().map(d -> d.envelope().id()).toList();
  }
}
