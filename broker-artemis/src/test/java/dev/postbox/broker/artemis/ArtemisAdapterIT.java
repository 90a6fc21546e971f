package dev.postbox.broker.artemis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.postbox.broker.artemis.testing.ArtemisTestBroker;
import dev.postbox.spi.Broker;
import dev.postbox.spi.Brokers;
import dev.postbox.spi.Consumer;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.MalformedMessageException;
import dev.postbox.spi.PermanentBrokerException;
import dev.postbox.spi.Subscription;
import dev.postbox.spi.testing.CompetingConsumers;
import dev.postbox.spi.testing.CrashVictim;
import jakarta.jms.Connection;
import jakarta.jms.Session;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;
import org.junit.jupiter.api.Test;

/** Artemis-specific behaviour beyond the conformance suite, against a real embedded broker. */
class ArtemisAdapterIT {

  private static final ArtemisTestBroker ARTEMIS = ArtemisTestBroker.shared();

  private static Broker open(String url) {
    return Brokers.open("artemis", Map.of("url", url, "publish.timeout", "10s"));
  }

  private static Envelope event(String key, int n) {
    return Envelope.builder()
        .source("urn:postbox:artemis-it")
        .type("TestEvent")
        .key(key)
        .payload(Integer.toString(n))
        .build();
  }

  private static List<Delivery> drain(Consumer c, int max, Duration quiet) {
    List<Delivery> got = new ArrayList<>();
    long until = System.nanoTime() + quiet.toNanos();
    while (System.nanoTime() < until) {
      List<Delivery> batch = c.poll(max, Duration.ofMillis(100));
      if (!batch.isEmpty()) {
        got.addAll(batch);
        batch.forEach(Delivery::ack);
        until = System.nanoTime() + quiet.toNanos();
      }
    }
    return got;
  }

  @Test
  void anEventsExpiryIsTheMessagesExpirationAndArtemisDropsItUnconsumed() {
    String queue = "expiry-" + UUID.randomUUID();
    try (Broker broker = open(ARTEMIS.url())) {
      broker.subscribe(Subscription.of(queue, "g")).close(); // the queue exists, nobody consumes
      Envelope expired =
          event("k", 1).toBuilder()
              .header(Envelope.EXPIRYTIME, java.time.Instant.now().minusSeconds(1).toString())
              .build();
      Envelope later =
          event("k", 2).toBuilder()
              .header(Envelope.EXPIRYTIME, java.time.Instant.now().plusSeconds(600).toString())
              .build();
      broker.publisher().publishAll(queue, List.of(expired, later));
      try (Consumer consumer = broker.subscribe(Subscription.of(queue, "g"))) {
        List<Delivery> got = receive(consumer, 1);
        got.addAll(drain(consumer, 10, Duration.ofMillis(500)));
        assertThat(got).extracting(d -> d.envelope().id()).containsExactly(later.id());
        assertThat(got.get(0).envelope().expiryTime()).contains(later.expiryTime().orElseThrow());
      }
    }
  }

  @Test
  void nativeDuplicateDetectionDropsARepublishedEventId() {
    String queue = "dedup-" + UUID.randomUUID();
    try (Broker broker = open(ARTEMIS.url())) {
      assertThat(broker.capabilities().nativeDeduplication()).isTrue();
      Consumer consumer = broker.subscribe(Subscription.of(queue, "g"));
      Envelope once = event("k", 1);
      broker.publisher().publish(queue, once);
      broker.publisher().publish(queue, once); // a relay retry after a lost reply

      // A batch holding one already-published id still publishes the others.
      Envelope fresh1 = event("a", 2);
      Envelope fresh2 = event("b", 3);
      broker.publisher().publishAll(queue, List.of(fresh1, once, fresh2));

      List<String> ids =
          drain(consumer, 10, Duration.ofSeconds(1)).stream().map(d -> d.envelope().id()).toList();
      assertThat(ids).containsExactlyInAnyOrder(once.id(), fresh1.id(), fresh2.id());
    }
  }

  @Test
  void messageGroupsKeepPerKeyOrderAcrossTwoCompetingConsumers() throws Exception {
    String queue = "groups-" + UUID.randomUUID();
    try (Broker broker = open(ARTEMIS.url())) {
      Consumer a = broker.subscribe(Subscription.of(queue, "g"));
      Consumer b = broker.subscribe(Subscription.of(queue, "g"));
      List<Envelope> sent = new ArrayList<>();
      for (int i = 0; i < 1_000; i++) {
        sent.add(event("key-" + (i % 20), i));
      }
      for (int from = 0; from < sent.size(); from += 100) {
        broker.publisher().publishAll(queue, sent.subList(from, from + 100));
      }
      CompetingConsumers.Result r =
          CompetingConsumers.drain(List.of(a, b), 1_000, Duration.ofSeconds(60));

      assertThat(r.perConsumer().get(0) + r.perConsumer().get(1)).isEqualTo(1_000);
      assertThat(r.perConsumer()).as("both consumers worked").allMatch(n -> n > 0);
      for (int k = 0; k < 20; k++) {
        String key = "key-" + k;
        List<Integer> expected = new ArrayList<>();
        for (int i = k; i < 1_000; i += 20) {
          expected.add(i);
        }
        assertThat(r.orderByKey().get(key))
            .as("order of %s", key)
            .containsExactlyElementsOf(expected);
        assertThat(r.consumersByKey().get(key)).as("one consumer per group").hasSize(1);
      }
    }
  }

  @Test
  void aKeysNackedEventsComeBackInTheOrderTheyWereNackedWhateverTheirDelays() throws Exception {
    String queue = "nack-order-" + UUID.randomUUID();
    // No prefetch: the copies wait in the broker's queue until received, as they do whenever a
    // busy consumer has no credit left. That is where Artemis' scheduling can reorder them.
    try (Broker broker = open(ARTEMIS.url() + "?consumerWindowSize=0");
        Consumer c = broker.subscribe(Subscription.of(queue, "g"))) {
      Envelope first = event("k", 1);
      Envelope second = event("k", 2);
      broker.publisher().publishAll(queue, List.of(first, second));
      List<Delivery> got = new ArrayList<>();
      while (got.size() < 2) {
        got.addAll(c.poll(2, Duration.ofMillis(500)));
      }
      // The inbox nacks a key's failed event, then (a poll later) sends its follower back behind
      // it; the follower's delay, reckoned from a later moment, can be the shorter one.
      got.get(0).nack(Duration.ofMillis(600));
      assertThat(c.poll(10, Duration.ofMillis(10))).isEmpty(); // applies the first nack
      got.get(1).nack(Duration.ofMillis(50));
      assertThat(c.poll(10, Duration.ofMillis(10))).isEmpty(); // applies the second

      var q =
          ARTEMIS
              .server()
              .getActiveMQServer()
              .locateQueue(org.apache.activemq.artemis.api.core.SimpleString.of(queue));
      org.awaitility.Awaitility.await()
          .atMost(Duration.ofSeconds(10))
          .until(() -> q.getScheduledCount() == 0 && q.getMessageCount() == 2);

      List<Delivery> back = drain(c, 10, Duration.ofSeconds(1));
      assertThat(back)
          .extracting(d -> new String(d.envelope().payload(), StandardCharsets.UTF_8))
          .containsExactly("1", "2");
    }
  }

  @Test
  void aBrokerRestartLosesNoAcknowledgedPublish() {
    try (ArtemisTestBroker own = ArtemisTestBroker.start()) {
      String queue = "durable";
      Set<String> published = new HashSet<>();
      try (Broker broker = open(own.url())) {
        for (int i = 0; i < 200; i++) {
          Envelope e = event("k" + (i % 7), i);
          broker.publisher().publish(queue, e);
          published.add(e.id());
        }
      }
      own.restart();
      try (Broker broker = open(own.url())) {
        Consumer c = broker.subscribe(Subscription.of(queue, "g"));
        Set<String> stored = new HashSet<>();
        for (Delivery d : drain(c, 100, Duration.ofSeconds(2))) {
          stored.add(d.envelope().id());
        }
        assertThat(stored).isEqualTo(published);
      }
    }
  }

  @Test
  void aConsumerKeepsConsumingAcrossABrokerRestart() {
    // Found by the crash harness: the consumer kept polling its dead session for good.
    try (ArtemisTestBroker own = ArtemisTestBroker.start();
        Broker broker = open(own.url())) {
      String queue = "restarts";
      Consumer consumer = broker.subscribe(Subscription.of(queue, "g"));
      Envelope acked = event("k", 1);
      Envelope unacked = event("k", 2);
      broker.publisher().publishAll(queue, List.of(acked, unacked));
      Map<String, Delivery> before = new HashMap<>();
      org.awaitility.Awaitility.await()
          .atMost(Duration.ofSeconds(30))
          .until(
              () -> {
                consumer
                    .poll(10, Duration.ofMillis(200))
                    .forEach(d -> before.put(d.envelope().id(), d));
                return before.size() == 2;
              });
      before.get(acked.id()).ack();
      consumer.poll(1, Duration.ofMillis(50)); // applies the ack

      own.restart();
      Envelope after = event("k", 3);
      org.awaitility.Awaitility.await()
          .atMost(Duration.ofSeconds(60))
          .ignoreExceptions() // the publisher's pool and the consumer reconnect on their own
          .untilAsserted(() -> broker.publisher().publish(queue, after));
      before.get(unacked.id()).ack(); // from the lost session: dropped, redelivered instead

      Set<String> received = new HashSet<>();
      org.awaitility.Awaitility.await()
          .atMost(Duration.ofSeconds(90))
          .ignoreExceptions() // polls fail retriably until the consumer has reconnected
          .until(
              () -> {
                for (Delivery d : consumer.poll(10, Duration.ofMillis(200))) {
                  received.add(d.envelope().id());
                  d.ack();
                }
                return received.contains(after.id()) && received.contains(unacked.id());
              });
      assertThat(received).doesNotContain(acked.id());
    }
  }

  @Test
  void aKilledConsumersUnackedMessagesAreRedelivered() throws Exception {
    String queue = "crash-" + UUID.randomUUID();
    Set<String> sent = new HashSet<>();
    try (Broker broker = open(ARTEMIS.url())) {
      for (int i = 0; i < 10; i++) {
        Envelope e = event("k" + i, i);
        broker.publisher().publish(queue, e);
        sent.add(e.id());
      }
      Set<String> held =
          CrashVictim.holdAndKill(
              "artemis",
              Map.of("url", ARTEMIS.url() + "?connectionTTL=2000&clientFailureCheckPeriod=500"),
              queue,
              "g",
              10);
      assertThat(held).isEqualTo(sent);
      Consumer survivor = broker.subscribe(Subscription.of(queue, "g"));
      Map<String, Integer> attempts = new HashMap<>();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (!attempts.keySet().containsAll(held) && System.nanoTime() < deadline) {
        for (Delivery d : survivor.poll(10, Duration.ofMillis(200))) {
          attempts.put(d.envelope().id(), d.attempt());
          d.ack();
        }
      }
      assertThat(attempts.keySet()).containsAll(held);
      assertThat(attempts.values())
          .as("JMSXDeliveryCount counts the lost delivery")
          .allMatch(n -> n >= 2);
    }
  }

  @Test
  void anOversizedMessageIsAPermanentError() {
    try (Broker broker =
        Brokers.open("artemis", Map.of("url", ARTEMIS.url(), "max.message.bytes", "1000"))) {
      Envelope big =
          Envelope.builder().source("urn:test").type("Big").payload(new byte[1_001]).build();
      assertThatThrownBy(() -> broker.publisher().publish("big", big))
          .isInstanceOf(PermanentBrokerException.class)
          .hasMessageContaining("over this broker's limit of 1000 (max.message.bytes)");
    }
  }

  @Test
  void aForeignMessageIsHandedOverAsMalformedAndTheConsumerGoesOn() throws Exception {
    String queue = "foreign-" + UUID.randomUUID();
    try (Broker broker = open(ARTEMIS.url());
        ActiveMQConnectionFactory factory = new ActiveMQConnectionFactory(ARTEMIS.url());
        Connection raw = factory.createConnection()) {
      Consumer consumer = broker.subscribe(Subscription.of(queue, "g"));
      Session s = raw.createSession(false, Session.AUTO_ACKNOWLEDGE);
      s.createProducer(s.createQueue(queue)).send(s.createTextMessage("plain text, no CloudEvent"));
      Envelope good = event("k", 1);
      broker.publisher().publish(queue, good);

      List<Delivery> got = new ArrayList<>();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (got.size() < 2 && System.nanoTime() < deadline) {
        got.addAll(consumer.poll(2, Duration.ofMillis(200)));
      }
      assertThat(got).hasSize(2);
      MalformedMessageException e =
          catchThrowableOfType(MalformedMessageException.class, () -> got.get(0).envelope());
      assertThat(e.reason()).contains("no ce_specversion");
      assertThat(new String(e.rawPayload(), StandardCharsets.UTF_8))
          .isEqualTo("plain text, no CloudEvent");
      got.get(0).ack();
      assertThat(got.get(1).envelope()).isEqualTo(good);
      got.get(1).ack();
    }
  }

  @Test
  void topicGroupsEachGetEveryEventAndShareItWithinTheGroup() {
    String topic = "topic:events-" + UUID.randomUUID();
    try (Broker broker = open(ARTEMIS.url())) {
      Consumer billing1 = broker.subscribe(Subscription.of(topic, "billing"));
      Consumer billing2 = broker.subscribe(Subscription.of(topic, "billing"));
      Consumer audit = broker.subscribe(Subscription.of(topic, "audit"));
      Set<String> sent = new HashSet<>();
      for (int i = 0; i < 20; i++) {
        Envelope e = event("k" + i, i);
        broker.publisher().publish(topic, e);
        sent.add(e.id());
      }
      Set<String> billing = new HashSet<>();
      List<Delivery> b1 = drain(billing1, 5, Duration.ofMillis(500));
      List<Delivery> b2 = drain(billing2, 5, Duration.ofMillis(500));
      b1.forEach(d -> billing.add(d.envelope().id()));
      b2.forEach(d -> billing.add(d.envelope().id()));
      Set<String> audited = new HashSet<>();
      drain(audit, 20, Duration.ofMillis(500)).forEach(d -> audited.add(d.envelope().id()));

      assertThat(billing).isEqualTo(sent);
      assertThat(b1.size() + b2.size()).as("no event twice within a group").isEqualTo(20);
      assertThat(audited).isEqualTo(sent);
    }
  }

  @Test
  void aNackCopyOnATopicReachesOnlyTheGroupThatNackedIt() {
    // Once a copy went to the whole topic: every other group got it again, with an attempt count
    // that was not its own, and in a lagging group it could overtake the key's earlier events.
    String topic = "topic:nacks-" + UUID.randomUUID();
    try (Broker broker = open(ARTEMIS.url())) {
      Consumer nacking = broker.subscribe(Subscription.of(topic, "nacking"));
      Consumer other = broker.subscribe(Subscription.of(topic, "other"));
      List<String> sent = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        Envelope e = event("k", i);
        broker.publisher().publish(topic, e);
        sent.add(e.id());
      }
      // The nacking group sends the key's three events back, in order, as the inbox's key hold
      // does, then takes the copies.
      List<Delivery> first = receive(nacking, 3);
      assertThat(first).extracting(d -> d.envelope().id()).containsExactlyElementsOf(sent);
      first.forEach(d -> d.nack(Duration.ofMillis(200)));
      List<Delivery> copies = receive(nacking, 3);
      assertThat(copies).extracting(d -> d.envelope().id()).containsExactlyElementsOf(sent);
      assertThat(copies).extracting(Delivery::attempt).containsOnly(2);
      copies.forEach(Delivery::ack);

      List<Delivery> seen = drain(other, 10, Duration.ofSeconds(2));
      assertThat(seen)
          .as("the other group gets each event once, in order, as its first attempt")
          .extracting(d -> d.envelope().id())
          .containsExactlyElementsOf(sent);
      assertThat(seen).extracting(Delivery::attempt).containsOnly(1);
      assertThat(drain(nacking, 10, Duration.ofMillis(700))).as("no more copies").isEmpty();
    }
  }

  private static List<Delivery> receive(Consumer c, int n) {
    List<Delivery> got = new ArrayList<>();
    long until = System.nanoTime() + Duration.ofSeconds(15).toNanos();
    while (got.size() < n && System.nanoTime() < until) {
      got.addAll(c.poll(n - got.size(), Duration.ofMillis(100)));
    }
    assertThat(got).hasSize(n);
    return got;
  }
}
