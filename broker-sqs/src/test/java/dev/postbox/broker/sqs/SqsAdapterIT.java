package dev.postbox.broker.sqs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.postbox.broker.sqs.testing.ElasticMqTestBroker;
import dev.postbox.spi.BatchPublishException;
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
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.SendMessageBatchRequest;
import software.amazon.awssdk.services.sqs.model.SendMessageBatchRequestEntry;
import software.amazon.awssdk.services.sqs.model.SendMessageRequest;

/** SQS-specific behaviour beyond the conformance suite, against ElasticMQ. */
class SqsAdapterIT {

  private static final ElasticMqTestBroker SQS = ElasticMqTestBroker.shared();

  private static Envelope event(String key, int n) {
    return Envelope.builder()
        .source("urn:postbox:sqs-it")
        .type("TestEvent")
        .key(key)
        .payload(Integer.toString(n))
        .build();
  }

  private static List<Delivery> drain(Consumer c, Duration quiet) {
    List<Delivery> got = new ArrayList<>();
    long until = System.nanoTime() + quiet.toNanos();
    while (System.nanoTime() < until) {
      List<Delivery> batch = c.poll(10, Duration.ofMillis(200));
      if (!batch.isEmpty()) {
        got.addAll(batch);
        batch.forEach(Delivery::ack);
        until = System.nanoTime() + quiet.toNanos();
      }
    }
    return got;
  }

  @Test
  void aServerThatDoesNotReportMessageRetentionGivesAnUnknownHorizonNotAnError() {
    // ElasticMQ keeps no MessageRetentionPeriod (AWS SQS does, default 4 days): the adapter must
    // answer "unknown" rather than guess or fail, so the inbox simply skips its startup check.
    String queue = "retention-" + UUID.randomUUID();
    SQS.createQueue(queue);
    try (Broker broker = Brokers.open("sqs", SQS.config("fifo", "false"))) {
      assertThat(broker.redeliveryHorizon(queue)).isEmpty();
    }
  }

  @Test
  void fifoDropsARepublishedDeduplicationIdWithinTheWindow() {
    String queue = "dedup-" + UUID.randomUUID() + ".fifo";
    SQS.createQueue(queue);
    try (Broker broker = Brokers.open("sqs", SQS.config("fifo", "true", "wait.time", "1s"))) {
      assertThat(broker.capabilities().nativeDeduplication()).isTrue();
      assertThat(broker.capabilities().deduplicationWindow()).isEqualTo(Duration.ofMinutes(5));
      Consumer c = broker.subscribe(Subscription.of(queue, "g"));
      Envelope e = event("k", 1);
      broker.publisher().publish(queue, e);
      broker.publisher().publish(queue, e);
      broker.publisher().publishAll(queue, List.of(e, event("k", 2)));
      List<String> ids =
          drain(c, Duration.ofSeconds(2)).stream().map(d -> d.envelope().id()).toList();
      assertThat(ids).hasSize(2).startsWith(e.id());
    }
  }

  @Test
  void fifoKeepsOrderWithinAGroupWhileTwoConsumersCompete() throws Exception {
    String queue = "order-" + UUID.randomUUID() + ".fifo";
    SQS.createQueue(queue);
    try (Broker broker = Brokers.open("sqs", SQS.config("fifo", "true", "wait.time", "1s"))) {
      List<Envelope> sent = new ArrayList<>();
      for (int i = 0; i < 200; i++) {
        sent.add(event("key-" + (i % 5), i));
      }
      for (int from = 0; from < sent.size(); from += 50) {
        broker.publisher().publishAll(queue, sent.subList(from, from + 50));
      }
      CompetingConsumers.Result r =
          CompetingConsumers.drain(
              List.of(
                  broker.subscribe(Subscription.of(queue, "g")),
                  broker.subscribe(Subscription.of(queue, "g"))),
              200,
              Duration.ofSeconds(60));
      assertThat(r.perConsumer().get(0) + r.perConsumer().get(1)).isEqualTo(200);
      assertThat(r.perConsumer()).as("both consumers worked").allMatch(n -> n > 0);
      for (int k = 0; k < 5; k++) {
        List<Integer> expected = new ArrayList<>();
        for (int i = k; i < 200; i += 5) {
          expected.add(i);
        }
        assertThat(r.orderByKey().get("key-" + k))
            .as("order of key-%s", k)
            .containsExactlyElementsOf(expected);
      }
    }
  }

  @Test
  void theHeartbeatKeepsASlowDeliveryFromBeingRedelivered() {
    assertThat(redeliveredDuringASlowHandler(true)).as("with the heartbeat").isFalse();
  }

  @Test
  void withoutTheHeartbeatASlowDeliveryIsRedelivered() {
    assertThat(redeliveredDuringASlowHandler(false)).as("without the heartbeat").isTrue();
  }

  /**
   * One consumer holds a delivery for 3x the visibility timeout (a slow handler) while another
   * polls the same queue the whole time.
   */
  private static boolean redeliveredDuringASlowHandler(boolean heartbeat) {
    String queue = "slow-" + UUID.randomUUID();
    SQS.createQueue(queue);
    String[] config = {
      "visibility.timeout",
      "2s",
      "heartbeat.interval",
      "500ms",
      "heartbeat",
      Boolean.toString(heartbeat),
      "wait.time",
      "1s"
    };
    try (Broker slow = Brokers.open("sqs", SQS.config(config));
        Broker other = Brokers.open("sqs", SQS.config(config))) {
      Consumer handler = slow.subscribe(Subscription.of(queue, "g"));
      Consumer competitor = other.subscribe(Subscription.of(queue, "g"));
      Envelope e = event("k", 1);
      slow.publisher().publish(queue, e);
      List<Delivery> held = new ArrayList<>();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (held.isEmpty() && System.nanoTime() < deadline) {
        held.addAll(handler.poll(1, Duration.ofSeconds(1)));
      }
      assertThat(held).hasSize(1);
      boolean redelivered = false;
      long handlerEnds = System.nanoTime() + TimeUnit.SECONDS.toNanos(6); // 3 x visibility timeout
      while (System.nanoTime() < handlerEnds) {
        for (Delivery d : competitor.poll(10, Duration.ofMillis(500))) {
          redelivered |= d.envelope().id().equals(e.id());
          d.ack();
        }
      }
      held.get(0).ack();
      return redelivered;
    }
  }

  @Test
  void aPartialBatchFailureIsReportedPerEnvelopeAndTheRestIsDelivered() {
    String queue = "partial-" + UUID.randomUUID();
    String url = SQS.createQueue(queue);
    SqsSettings settings = SqsSettings.from(SQS.config("wait.time", "1s"));
    // Fault injection: the third entry of every batch asks for an invalid delay, so the real
    // server rejects that entry, and only that one, in its own per-entry answer.
    SqsClient faulty = withBadThirdEntry(SqsBroker.client(settings));
    try (Broker broker = new SqsBroker(settings, false, faulty)) {
      Consumer c = broker.subscribe(Subscription.of(url, "g"));
      List<Envelope> batch =
          List.of(event("a", 0), event("b", 1), event("c", 2), event("d", 3), event("c", 4));
      BatchPublishException failure =
          catchThrowableOfType(
              BatchPublishException.class, () -> broker.publisher().publishAll(url, batch));
      assertThat(failure.failures()).containsOnlyKeys(2);
      assertThat(failure.failures().get(2)).isInstanceOf(PermanentBrokerException.class);
      assertThat(failure.succeeded()).containsExactly(0, 1, 3, 4);
      Set<String> delivered = new HashSet<>();
      drain(c, Duration.ofSeconds(2)).forEach(d -> delivered.add(d.envelope().id()));
      assertThat(delivered)
          .containsExactlyInAnyOrder(
              batch.get(0).id(), batch.get(1).id(), batch.get(3).id(), batch.get(4).id());
    }
  }

  private static SqsClient withBadThirdEntry(SqsClient real) {
    return (SqsClient)
        Proxy.newProxyInstance(
            SqsClient.class.getClassLoader(),
            new Class<?>[] {SqsClient.class},
            (proxy, method, args) -> {
              if (method.getName().equals("sendMessageBatch")
                  && args != null
                  && args[0] instanceof SendMessageBatchRequest r) {
                List<SendMessageBatchRequestEntry> entries = new ArrayList<>(r.entries());
                if (entries.size() >= 3) {
                  entries.set(2, entries.get(2).toBuilder().delaySeconds(100_000).build());
                }
                args = new Object[] {r.toBuilder().entries(entries).build()};
              }
              try {
                return method.invoke(real, args);
              } catch (InvocationTargetException e) {
                throw e.getCause();
              }
            });
  }

  @Test
  void aMessageOverTheSizeLimitIsAPermanentErrorWithAClearMessage() {
    String queue = "big-" + UUID.randomUUID();
    SQS.createQueue(queue);
    try (Broker broker = Brokers.open("sqs", SQS.config())) {
      Envelope big =
          Envelope.builder().source("urn:test").type("Big").payload("x".repeat(300 * 1024)).build();
      assertThatThrownBy(() -> broker.publisher().publish(queue, big))
          .isInstanceOf(PermanentBrokerException.class)
          .hasMessageContaining("over this broker's limit of")
          .hasMessageContaining("(max.message.bytes)");
    }
  }

  @Test
  void moreThanTenAttributesArePackedAndComeBackByteExact() {
    String queue = "attrs-" + UUID.randomUUID();
    SQS.createQueue(queue);
    try (Broker broker = Brokers.open("sqs", SQS.config("wait.time", "1s"))) {
      Consumer c = broker.subscribe(Subscription.of(queue, "g"));
      Envelope.Builder b =
          Envelope.builder()
              .source("urn:test")
              .type("Many")
              .subject("s")
              .key("k")
              .dataContentType("application/json")
              .header("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
              .header("tracestate", "a=b")
              .header("blank", "")
              .payload(new byte[] {0, 1, 2, (byte) 0xff});
      for (int i = 0; i < 12; i++) {
        b.header("ext" + i, "value & more = " + i);
      }
      Envelope e = b.build();
      broker.publisher().publish(queue, e);
      List<Delivery> got = drain(c, Duration.ofSeconds(1));
      assertThat(got).hasSize(1);
      assertThat(got.get(0).envelope()).isEqualTo(e);
    }
  }

  @Test
  void aForeignMessageIsHandedOverAsMalformedAndTheConsumerGoesOn() {
    String queue = "foreign-" + UUID.randomUUID();
    String url = SQS.createQueue(queue);
    try (Broker broker = Brokers.open("sqs", SQS.config("wait.time", "1s"))) {
      Consumer c = broker.subscribe(Subscription.of(queue, "g"));
      SQS.client()
          .sendMessage(
              SendMessageRequest.builder().queueUrl(url).messageBody("{\"legacy\":true}").build());
      Envelope good = event("k", 1);
      broker.publisher().publish(queue, good);
      List<Delivery> got = new ArrayList<>();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (got.size() < 2 && System.nanoTime() < deadline) {
        got.addAll(c.poll(2, Duration.ofSeconds(1)));
      }
      assertThat(got).hasSize(2);
      Delivery foreign =
          got.stream()
              .filter(d -> d.metadata().get("messageId") != null)
              .filter(
                  d -> {
                    try {
                      d.envelope();
                      return false;
                    } catch (MalformedMessageException x) {
                      return true;
                    }
                  })
              .findFirst()
              .orElseThrow();
      MalformedMessageException m =
          catchThrowableOfType(MalformedMessageException.class, foreign::envelope);
      assertThat(new String(m.rawPayload(), StandardCharsets.UTF_8)).isEqualTo("{\"legacy\":true}");
      assertThat(m.reason()).contains("no ce_specversion");
      got.forEach(Delivery::ack);
      assertThat(got.stream().filter(d -> d != foreign).findFirst().orElseThrow().envelope())
          .isEqualTo(good);
    }
  }

  @Test
  void aKilledConsumersMessagesComeBackAfterTheVisibilityTimeout() throws Exception {
    String queue = "crash-" + UUID.randomUUID();
    SQS.createQueue(queue);
    Set<String> sent = new HashSet<>();
    try (Broker broker =
        Brokers.open("sqs", SQS.config("visibility.timeout", "3s", "wait.time", "1s"))) {
      for (int i = 0; i < 5; i++) {
        Envelope e = event("k" + i, i);
        broker.publisher().publish(queue, e);
        sent.add(e.id());
      }
      Set<String> held =
          CrashVictim.holdAndKill(
              "sqs", SQS.config("visibility.timeout", "3s", "wait.time", "1s"), queue, "g", 5);
      assertThat(held).isEqualTo(sent);
      Consumer survivor = broker.subscribe(Subscription.of(queue, "g"));
      Set<String> back = new HashSet<>();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (!back.containsAll(held) && System.nanoTime() < deadline) {
        for (Delivery d : survivor.poll(10, Duration.ofSeconds(1))) {
          back.add(d.envelope().id());
          assertThat(d.attempt()).as("ApproximateReceiveCount").isGreaterThanOrEqualTo(2);
          d.ack();
        }
      }
      assertThat(back).containsAll(held);
    }
  }
}
