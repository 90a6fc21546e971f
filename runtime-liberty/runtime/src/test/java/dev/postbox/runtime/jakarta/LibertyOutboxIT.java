package dev.postbox.runtime.jakarta;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.broker.kafka.testing.KafkaTestBroker;
import dev.postbox.runtime.testing.TestDatabase;
import dev.postbox.spi.Broker;
import dev.postbox.spi.Brokers;
import dev.postbox.spi.Consumer;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Subscription;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The outbox wired into a real Open Liberty server (CDI, JPA/EclipseLink on a JTA data source,
 * Concurrency, MicroProfile Config/Metrics/Health) over PostgreSQL, publishing to a real Kafka
 * broker. One server for the class; it is killed and restarted in the middle.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class LibertyOutboxIT {

  private static final KafkaTestBroker KAFKA = KafkaTestBroker.shared();
  private TestDatabase db;
  private LibertyServer server;
  private Broker broker;
  private Consumer consumer;
  private final Set<String> received = new HashSet<>();
  private final String topic = "liberty-" + UUID.randomUUID();
  private final String inboxTopic = "liberty-inbox-" + UUID.randomUUID();

  @BeforeAll
  void start() {
    KAFKA.createTopic(topic, 4);
    KAFKA.createTopic(inboxTopic, 2);
    db = TestDatabase.create(TestDatabase.Kind.POSTGRESQL);
    db.execute(
        "CREATE TABLE it_charge (event_id VARCHAR(256) NOT NULL)"); // no unique: the inbox guards
    Map<String, String> config = new java.util.HashMap<>(LibertyInboxIT.scenarioTopics());
    config.putAll(
        Map.of(
            "postbox.broker", "kafka",
            "postbox.broker.bootstrap.servers", KAFKA.bootstrapServers(),
            "postbox.broker.publish.timeout", "10s",
            // A killed server's consumer leaves the group after this, not Kafka's 45 s.
            "postbox.broker.kafka.consumer.session.timeout.ms", "6000",
            "postbox.partitions", "8",
            "postbox.lease", "5s",
            "postbox.poll-interval", "200ms",
            "it.topic", topic,
            "it.inbox.topic", inboxTopic));
    server = new LibertyServer(db.schemaName(), config);
    server.start();
    broker = Brokers.open("kafka", Map.of("bootstrap.servers", KAFKA.bootstrapServers()));
    consumer = broker.subscribe(new Subscription(topic, "liberty-it", 10_000));
  }

  @AfterAll
  void stop() {
    if (broker != null) {
      broker.close();
    }
    if (server != null) {
      server.close();
    }
    if (db != null) {
      db.close();
    }
  }

  @Test
  @Order(0)
  void theSchemaIsMigratedAtStartWithoutAnErrorFromFlywayInTheLog() {
    // Flyway scans classpath:db/callback whatever it is told; inside Liberty that logged an error
    // at every start until the runtime jar shipped the folder's marker file.
    assertThat(server.log().lines().filter(l -> l.contains("org.flywaydb") && l.contains(" E ")))
        .isEmpty();
  }

  @Test
  @Order(1)
  void aRolledBackTransactionPublishesNothingAndACommittedOneIsPublishedAtOnce() throws Exception {
    HttpResponse<String> failed = server.post("/it/events?count=2&rollback=true");
    assertThat(failed.statusCode()).isEqualTo(500);

    HttpResponse<String> ok = server.post("/it/events?count=3");
    assertThat(ok.statusCode()).as(ok.body()).isEqualTo(200);
    List<String> ids = List.of(ok.body().split(","));
    long started = System.nanoTime();
    awaitReceived(ids, Duration.ofSeconds(30));
    Duration took = Duration.ofNanos(System.nanoTime() - started);

    assertThat(receivedFor(Duration.ofSeconds(1)))
        .as("nothing else, in particular not the rolled-back events")
        .isEmpty();
    assertThat(server.get("/it/pending").body()).isEqualTo("0");
    assertThat(took)
        .as("published right after the commit, not after a poll")
        .isLessThan(Duration.ofSeconds(5));
  }

  @Test
  @Order(2)
  void theRequestsTraceContextTravelsWithTheEvent() throws Exception {
    String traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    HttpResponse<String> ok =
        server.post(
            "/it/events?count=1", "traceparent", traceparent, "tracestate", "congo=t61rcWkgMzE");
    assertThat(ok.statusCode()).isEqualTo(200);
    Delivery d = awaitDelivery(ok.body(), Duration.ofSeconds(30));
    assertThat(d.envelope().header("traceparent")).isEqualTo(traceparent);
    assertThat(d.envelope().header("tracestate")).isEqualTo("congo=t61rcWkgMzE");
  }

  @Test
  @Order(2)
  void anIdempotentRequestRecordsOnceAndAnswersTheRetryWithTheFirstAnswer() throws Exception {
    String key = "it-" + System.nanoTime();
    HttpResponse<String> first = server.post("/it/idempotent", "Idempotency-Key", key);
    assertThat(first.statusCode()).as(first.body()).isEqualTo(201);
    HttpResponse<String> retry = server.post("/it/idempotent", "Idempotency-Key", key);
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.body()).isEqualTo(first.body());
    assertThat(retry.headers().firstValue("Idempotency-Replayed")).contains("true");
    awaitReceived(List.of(first.body()), Duration.ofSeconds(30));
    assertThat(receivedFor(Duration.ofSeconds(1))).as("one event, not two").isEmpty();
  }

  @Test
  @Order(2)
  void anIdempotentRequestWhoseWorkRunsInANewTransactionIsRefusedAndRecordsNothing()
      throws Exception {
    String key = "it-new-" + System.nanoTime();
    HttpResponse<String> r =
        server.post("/it/idempotent?inner=requires-new", "Idempotency-Key", key);
    assertThat(r.statusCode()).isEqualTo(500);
    assertThat(server.log()).contains("must join the request's transaction");
    // The key was released: the same mistake is refused again, not answered 409.
    assertThat(
            server.post("/it/idempotent?inner=requires-new", "Idempotency-Key", key).statusCode())
        .isEqualTo(500);
    assertThat(receivedFor(Duration.ofSeconds(1))).isEmpty();
  }

  @Test
  @Order(2)
  void aSwallowedOutboxFailureStillRollsTheTransactionBack() throws Exception {
    String id = "swallowed-" + System.nanoTime();
    // The application swallows the failure and answers as if all went well; the transaction is
    // rolled back all the same (rollback-only), so no business row can commit without its event.
    HttpResponse<String> r = server.post("/it/swallowed?id=" + id);
    assertThat(r.body()).contains("swallowed");
    assertThat(receivedFor(Duration.ofSeconds(2)))
        .as("the first event of that transaction must not exist either")
        .isEmpty();
  }

  @Test
  @Order(2)
  void recordingWithoutATransactionIsRefused() throws Exception {
    HttpResponse<String> r = server.post("/it/no-transaction");
    assertThat(r.statusCode()).isEqualTo(409);
    assertThat(r.body()).contains("needs an active JTA transaction");
  }

  @Test
  @Order(3)
  void metricsAndHealthReportTheOutbox() throws Exception {
    HttpResponse<String> metrics = server.get("/metrics?scope=application");
    assertThat(metrics.statusCode()).isEqualTo(200);
    assertThat(metrics.body())
        .contains("postbox_outbox_pending")
        .contains("postbox_outbox_published_total");
    HttpResponse<String> ready = server.get("/health/ready");
    assertThat(ready.body()).contains("postbox-outbox").contains("\"status\":\"UP\"");
  }

  @Test
  @Order(4)
  void eventsCommittedRightBeforeTheServerDiesArePublishedAfterTheRestart() throws Exception {
    try {
      server.post("/it/events-then-die?count=20");
    } catch (IOException expected) {
      // the server halted right after the commit, before answering
    }
    server.awaitExit(Duration.ofSeconds(30));
    String log = server.log();
    String line =
        log.lines().filter(l -> l.contains("IT-COMMITTED ")).reduce((a, b) -> b).orElseThrow();
    List<String> committed =
        List.of(line.substring(line.indexOf("IT-COMMITTED ") + 13).trim().split(","));
    assertThat(committed).hasSize(20);

    server.start();
    awaitReceived(committed, Duration.ofSeconds(60));
    assertThat(server.get("/it/pending").body()).isEqualTo("0");
  }

  @Test
  @Order(5)
  void theInboxChargesEachEventOnceThoughItIsDeliveredTwice() throws Exception {
    List<dev.postbox.spi.Envelope> events = new java.util.ArrayList<>();
    for (int i = 0; i < 200; i++) {
      events.add(charge("order-" + (i % 10), "{\"n\":" + i + "}"));
    }
    broker.publisher().publishAll(inboxTopic, events);
    broker.publisher().publishAll(inboxTopic, events); // every event a second time
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> charges() == 200);
    org.awaitility.Awaitility.await()
        .during(Duration.ofSeconds(2))
        .atMost(Duration.ofSeconds(10))
        .until(() -> charges() == 200);
    String metrics = server.get("/metrics?scope=application").body();
    assertThat(metrics)
        .containsPattern(
            "postbox_inbox_processed_total\\{[^}]*subscription=\"[^\"]*charges\"[^}]*} 200");
    assertThat(metrics).containsPattern("postbox_inbox_duplicates_total\\{[^}]*} [1-9]");
  }

  @Test
  @Order(6)
  void aServerKilledBetweenCommitAndAckSkipsTheRedeliveredEventsAfterTheRestart() throws Exception {
    long before = charges();
    List<dev.postbox.spi.Envelope> events = new java.util.ArrayList<>();
    for (int i = 0; i < 10; i++) {
      events.add(charge("k" + i, "{}"));
    }
    events.add(
        charge("k0", "die")); // committed with the others, then the JVM halts before the acks
    broker.publisher().publishAll(inboxTopic, events);
    server.awaitExit(Duration.ofSeconds(60));
    assertThat(server.log()).contains("IT-INBOX-COMMITTED");
    long committed = db.count("SELECT COUNT(*) FROM it_charge") - before;
    assertThat(committed).as("charges committed before the kill").isPositive();

    server.start(); // Kafka redelivers what was never acked: the inbox skips it as duplicates
    org.awaitility.Awaitility.await()
        .atMost(Duration.ofSeconds(60))
        .until(() -> charges() == before + 11);
    org.awaitility.Awaitility.await()
        .during(Duration.ofSeconds(3))
        .atMost(Duration.ofSeconds(10))
        .until(() -> charges() == before + 11);
  }

  private long charges() throws Exception {
    return Long.parseLong(server.get("/it/charges").body().trim());
  }

  private static dev.postbox.spi.Envelope charge(String key, String payload) {
    return dev.postbox.spi.Envelope.builder()
        .source("urn:it")
        .type("OrderCaptured")
        .key(key)
        .payload(payload)
        .build();
  }

  private void awaitReceived(List<String> ids, Duration max) {
    long deadline = System.nanoTime() + max.toNanos();
    while (!received.containsAll(ids) && System.nanoTime() < deadline) {
      for (Delivery d : consumer.poll(100, Duration.ofMillis(200))) {
        received.add(d.envelope().id());
        d.ack();
      }
    }
    assertThat(received).as("published events").containsAll(ids);
  }

  private Delivery awaitDelivery(String id, Duration max) {
    long deadline = System.nanoTime() + max.toNanos();
    while (System.nanoTime() < deadline) {
      for (Delivery d : consumer.poll(100, Duration.ofMillis(200))) {
        received.add(d.envelope().id());
        d.ack();
        if (d.envelope().id().equals(id)) {
          return d;
        }
      }
    }
    throw new AssertionError("event " + id + " not published within " + max);
  }

  private List<String> receivedFor(Duration period) {
    List<String> more = new java.util.ArrayList<>();
    long until = System.nanoTime() + period.toNanos();
    while (System.nanoTime() < until) {
      for (Delivery d : consumer.poll(100, Duration.ofMillis(100))) {
        if (received.add(d.envelope().id())) {
          more.add(d.envelope().id());
        }
        d.ack();
      }
    }
    return more;
  }
}
