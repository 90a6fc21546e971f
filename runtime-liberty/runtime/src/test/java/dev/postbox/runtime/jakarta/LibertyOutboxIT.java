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

  @BeforeAll
  void start() {
    KAFKA.createTopic(topic, 4);
    db = TestDatabase.create(TestDatabase.Kind.POSTGRESQL);
    server =
        new LibertyServer(
            db.schemaName(),
            Map.of(
                "postbox.broker", "kafka",
                "postbox.broker.bootstrap.servers", KAFKA.bootstrapServers(),
                "postbox.broker.publish.timeout", "10s",
                "postbox.partitions", "8",
                "postbox.lease", "5s",
                "postbox.poll-interval", "200ms",
                "it.topic", topic));
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
