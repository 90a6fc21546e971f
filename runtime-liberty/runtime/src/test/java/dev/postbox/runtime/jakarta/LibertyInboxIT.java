package dev.postbox.runtime.jakarta;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.broker.kafka.testing.KafkaTestBroker;
import dev.postbox.runtime.jakarta.deployment.Deployments;
import dev.postbox.runtime.jakarta.it.InboxItResource;
import dev.postbox.spi.Broker;
import dev.postbox.spi.Brokers;
import dev.postbox.spi.Envelope;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.jboss.arquillian.container.test.api.Deployment;
import org.jboss.arquillian.junit5.ArquillianExtension;
import org.jboss.arquillian.test.api.ArquillianResource;
import org.jboss.shrinkwrap.api.spec.WebArchive;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The inbox scenarios on a real Open Liberty server, PostgreSQL and Kafka: handlers are CDI beans
 * (one typed with JSON-B, one in deferred mode), writing through the JTA data source. Retries, dead
 * letters and replay, poison, conflicts, four parallel lanes, deferred mode, readiness and metrics.
 * A micro-deployment of the {@code it} application on the Arquillian-managed server, driven over
 * HTTP and through the broker.
 */
@ExtendWith(ArquillianExtension.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class LibertyInboxIT {

  private static final KafkaTestBroker KAFKA = KafkaTestBroker.shared();

  /** The scenario handlers' topics: every deployment of the test application must name them. */
  static Map<String, String> scenarioTopics() {
    Map<String, String> topics = new HashMap<>();
    for (String handler : List.of("flaky", "orders", "deferred", "sequenced")) {
      String topic = "liberty-" + handler + "-" + UUID.randomUUID();
      KAFKA.createTopic(topic, 4);
      topics.put("it." + handler + ".topic", topic);
    }
    return topics;
  }

  private static Map<String, String> topics;
  private static Deployments.TestSchema db;

  @Deployment(testable = false)
  public static WebArchive deployment() {
    topics = scenarioTopics();
    String unused = "liberty-unused-" + UUID.randomUUID();
    KAFKA.createTopic(unused, 1);
    db = Deployments.freshPostgresSchema("arq_inbox");
    db.execute("CREATE TABLE it_charge (event_id VARCHAR(256) NOT NULL)");
    db.execute(
        "CREATE TABLE it_effect (seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
            + " subscription VARCHAR(64) NOT NULL, event_id VARCHAR(256) NOT NULL,"
            + " note VARCHAR(400))");
    Map<String, String> config = new HashMap<>(topics);
    config.putAll(
        Map.of(
            "postbox.broker", "kafka",
            "postbox.broker.bootstrap.servers", KAFKA.bootstrapServers(),
            "postbox.inbox.max-attempts", "3",
            "postbox.inbox.initial-delay", "100ms",
            "postbox.inbox.max-delay", "500ms",
            "postbox.inbox.max-payload-bytes", "2048",
            "postbox.inbox.workers", "4",
            "postbox.inbox.deferred", "deferred",
            "postbox.inbox.sequenced", "sequenced"));
    config.put("it.topic", unused);
    config.put("it.inbox.topic", unused);
    return Deployments.war("liberty-inbox", "kafka", "jdbc/arq-inbox", config)
        .addPackage(InboxItResource.class.getPackage());
  }

  @ArquillianResource URL deployed;

  private ItHttp server;
  private Broker broker;

  @BeforeAll
  void openBroker() {
    broker = Brokers.open("kafka", Map.of("bootstrap.servers", KAFKA.bootstrapServers()));
  }

  @BeforeEach
  void connect() {
    server = new ItHttp(deployed);
  }

  @AfterAll
  void stop() {
    if (broker != null) {
      broker.close();
    }
  }

  @Test
  @Order(1)
  void aHandlerThatFailsTwiceThenSucceedsHasOneEffectPerEvent() throws Exception {
    List<Envelope> events = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      events.add(
          event("Charge", "k" + i, "flaky-" + i).toBuilder()
              .header(
                  "traceparent", "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b" + i + "-01")
              .build());
    }
    broker.publisher().publishAll(topic("flaky"), events);
    await().atMost(Duration.ofSeconds(60)).until(() -> effects("flaky").size() == 5);
    await()
        .during(Duration.ofSeconds(1))
        .atMost(Duration.ofSeconds(5))
        .until(() -> effects("flaky").size() == 5);
    assertThat(effects("flaky"))
        .extracting(line -> line.split(" ")[0])
        .containsExactlyInAnyOrderElementsOf(events.stream().map(Envelope::id).toList());
    assertThat(server.server("/metrics?scope=application").body())
        .containsPattern("postbox_inbox_retries_total\\{[^}]*flaky\"[^}]*} [1-9]");
    assertThat(db.count("SELECT COUNT(*) FROM postbox_outbox WHERE event_type = 'ChargeRecorded'"))
        .as("follow-up events: the failed attempts' were rolled back with them")
        .isEqualTo(5);
    assertThat(
            db.count(
                "SELECT COUNT(*) FROM postbox_outbox WHERE event_type = 'ChargeRecorded'"
                    + " AND headers LIKE '%0af7651916cd43dd8448eb211c80319c%'"))
        .as("follow-up events continue their cause's trace")
        .isEqualTo(5);
  }

  @Test
  @Order(2)
  void aHandlerThatAlwaysFailsIsDeadLetteredThenReplayedAfterTheFixWithOneEffect()
      throws Exception {
    server.post("/it/inbox/break");
    Envelope doomed = event("Charge", "k", "bug-1");
    broker.publisher().publish(topic("flaky"), doomed);
    String subscription = topic("flaky") + "/flaky";
    await().atMost(Duration.ofSeconds(60)).until(() -> !deadLetters(subscription).isEmpty());
    String[] letter = deadLetters(subscription).get(0).split(" ");
    assertThat(letter[1]).isEqualTo("HANDLER_FAILED");
    assertThat(letter[2]).isEqualTo(doomed.id());
    assertThat(letter[3]).as("attempts").isEqualTo("3");
    assertThat(effectsOf("flaky", doomed.id())).isZero();

    server.post("/it/inbox/fix");
    var replay = server.post("/it/inbox/replay?subscription=" + subscription + "&id=" + letter[0]);
    assertThat(replay.body()).isEqualTo("true");
    assertThat(effectsOf("flaky", doomed.id())).isEqualTo(1);
    assertThat(deadLetters(subscription)).isEmpty();
    var again = server.post("/it/inbox/replay?subscription=" + subscription + "&id=" + letter[0]);
    assertThat(again.statusCode()).as("a settled letter is not replayed twice").isNotEqualTo(200);
    assertThat(effectsOf("flaky", doomed.id())).isEqualTo(1);
  }

  @Test
  @Order(3)
  void eachPoisonClassIsDeadLetteredWithItsReasonAndTheNextEventIsProcessed() throws Exception {
    String topic = topic("orders");
    try (KafkaProducer<byte[], byte[]> raw =
        new KafkaProducer<>(
            Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, KAFKA.bootstrapServers(),
                ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class,
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class))) {
      byte[] key = "poison".getBytes(StandardCharsets.UTF_8);
      raw.send(new ProducerRecord<>(topic, key, "not an event".getBytes(StandardCharsets.UTF_8)))
          .get();
      ProducerRecord<byte[], byte[]> noId =
          new ProducerRecord<>(topic, key, "{}".getBytes(StandardCharsets.UTF_8));
      noId.headers().add("ce_specversion", "1.0".getBytes(StandardCharsets.UTF_8));
      noId.headers().add("ce_source", "urn:x".getBytes(StandardCharsets.UTF_8));
      noId.headers().add("ce_type", "OrderCaptured".getBytes(StandardCharsets.UTF_8));
      noId.headers().add("ce_time", "2026-01-01T00:00:00Z".getBytes(StandardCharsets.UTF_8));
      raw.send(noId).get();
    }
    Envelope unknown = event("Unheard", "poison", "{}");
    Envelope oversized = event("OrderCaptured", "poison", "{\"pad\":\"" + "x".repeat(3000) + "\"}");
    Envelope undecodable = event("OrderCaptured", "poison", "{\"seq\": \"one\"}");
    Envelope good = event("OrderCaptured", "poison", "{\"seq\": 1, \"amountCents\": 100}");
    for (Envelope e : List.of(unknown, oversized, undecodable, good)) {
      broker.publisher().publish(topic, e); // one key, one partition: in this order
    }
    String subscription = topic + "/orders";
    await()
        .atMost(Duration.ofSeconds(60))
        .until(() -> deadLetters(subscription).size() == 5 && effectsOf("orders", good.id()) == 1);
    // Undecodable messages have no key and take another lane: compare without order.
    assertThat(deadLetters(subscription))
        .extracting(line -> line.split(" ")[1])
        .containsExactlyInAnyOrder(
            "MALFORMED", "MISSING_ID", "UNKNOWN_TYPE", "OVERSIZED", "MALFORMED");
    assertThat(deadLetters(subscription))
        .filteredOn(l -> l.contains(undecodable.id()))
        .singleElement()
        .satisfies(l -> assertThat(l).contains(" MALFORMED ").endsWith(" 1"));
  }

  @Test
  @Order(4)
  void theSameIdWithAnotherPayloadIsAConflictAndHasNoSecondEffect() throws Exception {
    Envelope original = event("OrderCaptured", "c", "{\"seq\": 1}");
    Envelope impostor = original.toBuilder().payload("{\"seq\": 2}").build();
    broker.publisher().publish(topic("orders"), original);
    broker.publisher().publish(topic("orders"), impostor);
    String subscription = topic("orders") + "/orders";
    await()
        .atMost(Duration.ofSeconds(60))
        .until(() -> deadLetters(subscription).stream().anyMatch(l -> l.contains(" CONFLICT ")));
    assertThat(effectsOf("orders", original.id())).isEqualTo(1);
    assertThat(server.server("/metrics?scope=application").body())
        .containsPattern("postbox_inbox_conflicts_total\\{[^}]*orders\"[^}]*} 1");
  }

  @Test
  @Order(5)
  void fourParallelLanesKeepEachKeysOrder() throws Exception {
    List<Envelope> events = new ArrayList<>();
    for (int i = 0; i < 1_000; i++) {
      events.add(event("OrderCaptured", "lane-" + (i % 10), "{\"seq\": " + (i / 10) + "}"));
    }
    broker.publisher().publishAll(topic("orders"), events);
    await()
        .atMost(Duration.ofSeconds(90))
        .until(() -> effects("orders").stream().filter(l -> l.contains(" lane-")).count() == 1_000);
    assertPerKeyOrder(effects("orders"), "lane-", 10, 100);
  }

  @Test
  @Order(6)
  void deferredModeProcessesEachEventOnceInPerKeyOrderThroughFailuresAndDuplicates()
      throws Exception {
    List<Envelope> events = new ArrayList<>();
    for (int i = 0; i < 600; i++) {
      events.add(event("Note", "d-" + (i % 6), Integer.toString(i / 6)));
    }
    broker.publisher().publishAll(topic("deferred"), events);
    broker.publisher().publishAll(topic("deferred"), events.subList(0, 300)); // duplicates
    await().atMost(Duration.ofSeconds(90)).until(() -> effects("deferred").size() >= 600);
    await()
        .during(Duration.ofSeconds(2))
        .atMost(Duration.ofSeconds(10))
        .until(() -> effects("deferred").size() == 600);
    assertPerKeyOrder(effects("deferred"), "d-", 6, 100);
    String metrics = server.server("/metrics?scope=application").body();
    assertThat(metrics)
        .containsPattern("postbox_inbox_received_total\\{[^}]*deferred\"[^}]*} 600")
        .containsPattern("postbox_inbox_processed_total\\{[^}]*deferred\"[^}]*} 600")
        .containsPattern("postbox_inbox_retries_total\\{[^}]*deferred\"[^}]*} [1-9]");
  }

  @Test
  @Order(7)
  void readinessReportsTheBrokerAndDatabaseAndMetricsTheHandlerTime() throws Exception {
    String ready = server.server("/health/ready").body();
    assertThat(ready)
        .contains("postbox-inbox")
        .contains("\"broker\":\"UP\"")
        .contains("\"database\":\"UP\"")
        .contains("deferred " + topic("deferred") + "/deferred");
    assertThat(server.server("/metrics?scope=application").body())
        .containsPattern("postbox_inbox_handler_seconds_count\\{[^}]*orders\"[^}]*} [1-9]");
  }

  @Test
  @Order(8)
  void aSequencedSubscriptionParksAKeysLaterEventsBehindItsDeadLetterUntilTheReplay()
      throws Exception {
    String subscription = topic("sequenced") + "/sequenced";
    Envelope poison = event("Charge", "s", "poison-1");
    Envelope second = event("Charge", "s", "second");
    Envelope third = event("Charge", "s", "third");
    Envelope other = event("Charge", "t", "other-key");
    broker.publisher().publishAll(topic("sequenced"), List.of(poison, second, third, other));
    await().atMost(Duration.ofSeconds(60)).until(() -> deadLetters(subscription).size() == 3);
    List<String> letters = deadLetters(subscription);
    assertThat(letters)
        .extracting(l -> l.split(" ")[1] + " " + l.split(" ")[2])
        .containsExactly(
            "HANDLER_FAILED " + poison.id(), "PARKED " + second.id(), "PARKED " + third.id());
    await().atMost(Duration.ofSeconds(30)).until(() -> effects("sequenced").size() == 1);
    assertThat(effects("sequenced")).containsExactly(other.id() + " other-key");

    String head = letters.get(0).split(" ")[0];
    String parked = letters.get(1).split(" ")[0];
    var outOfTurn = server.post("/it/inbox/replay?subscription=" + subscription + "&id=" + parked);
    assertThat(outOfTurn.statusCode())
        .as("a parked letter is not replayed out of turn")
        .isNotEqualTo(200);

    server.post("/it/inbox/sequenced/fix");
    var replay = server.post("/it/inbox/replay?subscription=" + subscription + "&id=" + head);
    assertThat(replay.body()).isEqualTo("true");
    assertThat(effects("sequenced"))
        .containsExactly(
            other.id() + " other-key",
            poison.id() + " poison-1",
            second.id() + " second",
            third.id() + " third");
    assertThat(deadLetters(subscription)).isEmpty();
    assertThat(server.server("/metrics?scope=application").body())
        .containsPattern("postbox_inbox_parked_total\\{[^}]*sequenced\"[^}]*} 2");
  }

  private static void assertPerKeyOrder(
      List<String> effects, String keyPrefix, int keys, int perKey) {
    Map<String, List<Integer>> order = new HashMap<>();
    for (String line : effects) {
      String note = line.split(" ")[1];
      if (note.startsWith(keyPrefix)) {
        String[] keySeq = note.split(":");
        order.computeIfAbsent(keySeq[0], k -> new ArrayList<>()).add(Integer.parseInt(keySeq[1]));
      }
    }
    assertThat(order).hasSize(keys);
    order.forEach(
        (key, seqs) -> assertThat(seqs).as("order of %s", key).isSorted().hasSize(perKey));
  }

  private String topic(String handler) {
    return topics.get("it." + handler + ".topic");
  }

  private List<String> effects(String handler) throws Exception {
    String body = server.get("/it/inbox/effects?handler=" + handler).body();
    return body.isBlank() ? List.of() : List.of(body.split("\n"));
  }

  private long effectsOf(String handler, String eventId) throws Exception {
    return effects(handler).stream().filter(l -> l.startsWith(eventId + " ")).count();
  }

  private List<String> deadLetters(String subscription) throws Exception {
    String body = server.get("/it/inbox/dead-letters?subscription=" + subscription).body();
    return body.isBlank() ? List.of() : List.of(body.split("\n"));
  }

  private static Envelope event(String type, String key, String payload) {
    return Envelope.builder().source("urn:it").type(type).key(key).payload(payload).build();
  }
}
