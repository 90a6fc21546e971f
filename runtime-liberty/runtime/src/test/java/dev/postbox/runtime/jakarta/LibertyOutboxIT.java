package dev.postbox.runtime.jakarta;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.broker.kafka.testing.KafkaTestBroker;
import dev.postbox.runtime.jakarta.deployment.Deployments;
import dev.postbox.runtime.jakarta.it.OutboxItResource;
import dev.postbox.spi.Broker;
import dev.postbox.spi.Brokers;
import dev.postbox.spi.Consumer;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Subscription;
import java.net.URL;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
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
 * The outbox wired into a real Open Liberty server (CDI, JTA data source, Concurrency, MicroProfile
 * Config/Metrics/Health) over PostgreSQL, publishing to a real Kafka broker: a micro-deployment of
 * the {@code it} application on the Arquillian-managed server, driven over HTTP. Kills between
 * commit and answer, and between inbox commit and ack, are the payments app's crash harness's
 * windows (it SIGKILLs servers, which Arquillian's container cannot).
 */
@ExtendWith(ArquillianExtension.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class LibertyOutboxIT {

  private static final KafkaTestBroker KAFKA = KafkaTestBroker.shared();
  private static final String TOPIC = "liberty-" + UUID.randomUUID();
  private static final String INBOX_TOPIC = "liberty-inbox-" + UUID.randomUUID();

  @Deployment(testable = false)
  public static WebArchive deployment() {
    KAFKA.createTopic(TOPIC, 4);
    KAFKA.createTopic(INBOX_TOPIC, 2);
    Deployments.TestSchema db = Deployments.freshPostgresSchema("arq_outbox");
    db.execute(
        "CREATE TABLE it_charge (event_id VARCHAR(256) NOT NULL)"); // no unique: the inbox guards
    Map<String, String> config = new java.util.HashMap<>(LibertyInboxIT.scenarioTopics());
    config.putAll(
        Map.of(
            "postbox.broker", "kafka",
            "postbox.broker.bootstrap.servers", KAFKA.bootstrapServers(),
            "postbox.broker.publish.timeout", "10s",
            "postbox.partitions", "8",
            "postbox.lease", "5s",
            "postbox.poll-interval", "200ms",
            "it.topic", TOPIC,
            "it.inbox.topic", INBOX_TOPIC));
    return Deployments.war("liberty-outbox", "kafka", "jdbc/arq-outbox", config)
        .addPackage(OutboxItResource.class.getPackage());
  }

  @ArquillianResource URL deployed;

  private ItHttp server;
  private Broker broker;
  private Consumer consumer;
  private final Set<String> received = new HashSet<>();

  @BeforeAll
  void subscribe() {
    broker = Brokers.open("kafka", Map.of("bootstrap.servers", KAFKA.bootstrapServers()));
    consumer = broker.subscribe(new Subscription(TOPIC, "liberty-it", 10_000));
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
  @Order(0)
  void theSchemaIsMigratedAtStartWithoutAnErrorFromFlywayInTheLog() {
    // Flyway scans classpath:db/callback whatever it is told; inside Liberty that logged an error
    // at every start until the runtime jar shipped the folder's marker file.
    assertThat(
            Deployments.serverLog()
                .lines()
                .filter(l -> l.contains("org.flywaydb") && l.contains(" E ")))
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
    assertThat(Deployments.serverLog()).contains("must join the request's transaction");
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
    HttpResponse<String> metrics = server.server("/metrics?scope=application");
    assertThat(metrics.statusCode()).isEqualTo(200);
    assertThat(metrics.body())
        .contains("postbox_outbox_pending")
        .contains("postbox_outbox_published_total");
    HttpResponse<String> ready = server.server("/health/ready");
    assertThat(ready.body()).contains("postbox-outbox").contains("\"status\":\"UP\"");
  }

  @Test
  @Order(5)
  void theInboxChargesEachEventOnceThoughItIsDeliveredTwice() throws Exception {
    List<dev.postbox.spi.Envelope> events = new java.util.ArrayList<>();
    for (int i = 0; i < 200; i++) {
      events.add(charge("order-" + (i % 10), "{\"n\":" + i + "}"));
    }
    long before = charges();
    broker.publisher().publishAll(INBOX_TOPIC, events);
    broker.publisher().publishAll(INBOX_TOPIC, events); // every event a second time
    org.awaitility.Awaitility.await()
        .atMost(Duration.ofSeconds(60))
        .until(() -> charges() == before + 200);
    org.awaitility.Awaitility.await()
        .during(Duration.ofSeconds(2))
        .atMost(Duration.ofSeconds(10))
        .until(() -> charges() == before + 200);
    String metrics = server.server("/metrics?scope=application").body();
    assertThat(metrics)
        .containsPattern(
            "postbox_inbox_processed_total\\{[^}]*subscription=\"[^\"]*charges\"[^}]*} 200");
    assertThat(metrics).containsPattern("postbox_inbox_duplicates_total\\{[^}]*} [1-9]");
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
