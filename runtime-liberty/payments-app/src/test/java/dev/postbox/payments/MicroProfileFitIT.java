package dev.postbox.payments;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.payments.crash.CrashPoints;
import io.opentelemetry.proto.trace.v1.Span;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The MicroProfile fit on one real Liberty, as an application uses it: the payments WAR with {@code
 * mpReactiveMessaging-3.0}, the connector jar and a small test app (a servlet that sends with
 * {@code Emitter}, an {@code @Incoming} method that writes a row), the channels and MicroProfile
 * Telemetry configured as server variables (MicroProfile Config), PostgreSQL, and the embedded
 * Artemis broker.
 *
 * <ul>
 *   <li>Reactive Messaging: the outgoing channel {@code rm-out} and the incoming channel {@code
 *       rm-in} meet on the destination {@code rm-events}: what is sent comes back through the inbox
 *       (tests 1 to 6).
 *   <li>Traces: spans on, exported with OTLP (http/protobuf) to a collector this test runs; one
 *       {@code POST /orders} must give one trace that covers the request, the order event's four
 *       spans, the charge, the payment event's four spans and the notification (test 7).
 * </ul>
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class MicroProfileFitIT {

  private static final String ADMIN_URL = "jdbc:postgresql://127.0.0.1:5432/test";
  private static final String SUBSCRIPTION = "rm-events/rm-it";
  private final String schema = "rm_it_" + Long.toHexString(System.nanoTime());
  private final HttpClient http = HttpClient.newHttpClient();
  private final OtlpCollector collector = new OtlpCollector();
  private VariantServer server;
  private Path crashPoints;

  @BeforeAll
  void start() throws Exception {
    try (Connection c = DriverManager.getConnection(ADMIN_URL, "postgres", "");
        Statement s = c.createStatement()) {
      s.execute("CREATE SCHEMA " + schema); // a name made here, not input
      s.execute(
          "CREATE TABLE "
              + schema
              + ".rm_effect (payload VARCHAR(200) NOT NULL, attempt INT NOT NULL,"
              + " in_transaction BOOLEAN NOT NULL)");
    }
    server =
        new VariantServer(
            "artemis",
            "payments-reactive",
            Map.ofEntries(
                Map.entry("db.url", ADMIN_URL + "?currentSchema=" + schema),
                Map.entry("db.driver", "org.postgresql.Driver"),
                Map.entry("db.user", "postgres"),
                Map.entry("payments.embedded-artemis", "true"),
                Map.entry("postbox.broker", "artemis"),
                Map.entry("postbox.broker.url", "vm://0"),
                Map.entry("postbox.inbox.max-attempts", "3"),
                Map.entry("postbox.inbox.initial-delay", "100ms"),
                Map.entry("mp.messaging.outgoing.rm-out.connector", "postbox"),
                Map.entry("mp.messaging.outgoing.rm-out.destination", "rm-events"),
                Map.entry("mp.messaging.outgoing.rm-out.type", "RmTested"),
                Map.entry("mp.messaging.incoming.rm-in.connector", "postbox"),
                Map.entry("mp.messaging.incoming.rm-in.destination", "rm-events"),
                Map.entry("mp.messaging.incoming.rm-in.group", "rm-it"),
                // traces on, as an operator turns them on, exported to this test's collector
                Map.entry("otel.sdk.disabled", "false"),
                Map.entry("otel.service.name", "payments-mp-fit-it"),
                Map.entry("otel.traces.exporter", "otlp"),
                Map.entry("otel.exporter.otlp.traces.protocol", "http/protobuf"),
                Map.entry("otel.exporter.otlp.traces.endpoint", collector.endpoint()),
                Map.entry("otel.metrics.exporter", "none"),
                Map.entry("otel.logs.exporter", "none"),
                Map.entry("otel.bsp.schedule.delay", "200")));
    server.addFeatures("mpReactiveMessaging-3.0");
    try (var jars =
        Files.list(Path.of(System.getProperty("payments.adapters"), "reactive-messaging"))) {
      jars.forEach(j -> server.addToWar(j, j.getFileName().toString()));
    }
    server.addToWar(
        Path.of(System.getProperty("payments.reactive-it.jar")), "postbox-reactive-it.jar");
    crashPoints = server.enableCrashPoints(null);
    server.start();
  }

  @AfterAll
  void stop() throws Exception {
    if (server != null) {
      server.close();
    }
    collector.close();
    try (Connection c = DriverManager.getConnection(ADMIN_URL, "postgres", "");
        Statement s = c.createStatement()) {
      s.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    }
  }

  @Test
  @Order(1)
  void aMessageSentInACommittedTransactionReachesTheIncomingMethodOnceInsideTheInboxTransaction()
      throws Exception {
    String payload = "committed-" + UUID.randomUUID();
    assertThat(send("commit", payload)).isEqualTo("committed");

    List<Effect> effects = awaitEffects(payload, 1);
    assertThat(effects).containsExactly(new Effect(1, true));
    assertThat(outboxRows(payload)).as("recorded by the outbox").isEqualTo(1);
    assertThat(outboxColumn(payload, "event_key")).as("the key from OutgoingEvent").isEqualTo("k");
    assertThat(outboxColumn(payload, "event_type")).as("the channel's type").isEqualTo("RmTested");
  }

  @Test
  @Order(2)
  void aMessageSentInARolledBackTransactionIsNeverRecordedNorDelivered() throws Exception {
    String rolledBack = "rolled-back-" + UUID.randomUUID();
    String after = "after-" + UUID.randomUUID();
    assertThat(send("rollback", rolledBack)).isEqualTo("rolled back");
    assertThat(send("commit", after)).isEqualTo("committed");

    awaitEffects(after, 1); // the later message went the whole way
    assertThat(effects(rolledBack)).isEmpty();
    assertThat(outboxRows(rolledBack)).isZero();
  }

  @Test
  @Order(3)
  void aMessageSentWithoutATransactionFailsClearlyAndIsNotRecorded() throws Exception {
    String payload = "no-transaction-" + UUID.randomUUID();
    assertThat(send("none", payload))
        .startsWith("failed: ")
        .contains("outside a JTA transaction")
        .contains("rm-out");
    String bare = "no-transaction-bare-" + UUID.randomUUID();
    assertThat(send("bare", bare)).startsWith("failed: ").contains("outside a JTA transaction");
    assertThat(outboxRows(payload)).isZero();
    assertThat(outboxRows(bare)).isZero();
    assertThat(server.log()).contains("outside a JTA transaction");
  }

  @Test
  @Order(4)
  void aFailingMethodIsRetriedAndItsFailedAttemptsLeaveNoWrites() throws Exception {
    String payload = "flaky-" + UUID.randomUUID();
    assertThat(send("commit", payload)).isEqualTo("committed");

    // attempts 1 and 2 wrote a row and threw: both rolled back with the inbox record
    assertThat(awaitEffects(payload, 1)).containsExactly(new Effect(3, true));
  }

  @Test
  @Order(5)
  void aMethodThatAlwaysFailsEndsAsADeadLetterWithItsReason() throws Exception {
    String payload = "poison-" + UUID.randomUUID();
    assertThat(send("commit", payload)).isEqualTo("committed");

    Awaitility.await().atMost(Duration.ofMinutes(1)).until(() -> deadLetter(payload) != null);
    assertThat(deadLetter(payload))
        .startsWith("HANDLER_FAILED java.lang.IllegalStateException")
        .contains("attempt 3 of " + payload + " fails");
    assertThat(effects(payload)).isEmpty();
  }

  @Test
  @Order(6)
  void aKillBetweenTheInboxCommitAndTheAckHasNoSecondEffect() throws Exception {
    long duplicatesBefore = duplicates();
    Files.deleteIfExists(crashPoints.resolve("reached"));
    Files.writeString(
        crashPoints.resolve("armed"), CrashPoints.INBOX_COMMITTED_NOT_ACKED + " park");
    String payload = "crash-" + UUID.randomUUID();
    assertThat(send("commit", payload)).isEqualTo("committed");

    Awaitility.await()
        .atMost(Duration.ofMinutes(1))
        .until(() -> Files.exists(crashPoints.resolve("reached")));
    // parked after the commit, before the ack: the effect is in, the broker still has the event
    assertThat(effects(payload)).containsExactly(new Effect(1, true));
    server.kill();
    Files.deleteIfExists(crashPoints.resolve("armed"));
    server.start();

    // the broker redelivers the unacknowledged event; the inbox rejects it as a duplicate
    Awaitility.await().atMost(Duration.ofMinutes(2)).until(() -> duplicates() > duplicatesBefore);
    assertThat(effects(payload)).containsExactly(new Effect(1, true));
  }

  @Test
  @Order(7)
  void aScheduledMessageWaitsInTheOutboxWithItsScheduleAndIsCancelledByItsId() throws Exception {
    String payload = "scheduled-" + UUID.randomUUID();
    String id = "hold-" + UUID.randomUUID();
    assertThat(send("scheduled", payload, id)).isEqualTo("committed");
    assertThat(outboxColumn(payload, "status")).isEqualTo("SCHEDULED_KEY");
    assertThat(outboxColumn(payload, "event_id")).isEqualTo(id);
    assertThat(outboxColumn(payload, "headers")).contains("expirytime");
    try (Connection c = db();
        PreparedStatement s =
            c.prepareStatement(
                "SELECT next_attempt_at - clock_timestamp() > INTERVAL '59 minutes'"
                    + " FROM postbox_outbox WHERE event_id = ?")) {
      s.setString(1, id);
      try (ResultSet rs = s.executeQuery()) {
        assertThat(rs.next() && rs.getBoolean(1)).as("due in an hour").isTrue();
      }
    }
    assertThat(send("cancel", "", id)).isEqualTo("cancelled");
    assertThat(send("cancel", "", id)).isEqualTo("not scheduled");
    assertThat(outboxColumn(payload, "status")).isEqualTo("CANCELLED");
  }

  @Test
  @Order(8)
  void anOrderIsOneTraceFromTheRequestThroughThePaymentToTheNotification() {
    PaymentsApi api = new PaymentsApi(server.url());
    var placed = api.post("/orders", "{\"customer\":\"traced\",\"amountCents\":1234}");
    assertThat(placed.statusCode()).as(placed.body()).isIn(200, 201, 202);

    List<String> expected =
        List.of(
            "create orders",
            "outbox orders",
            "send orders",
            "process orders",
            "create payments",
            "outbox payments",
            "send payments",
            "process payments");
    Awaitility.await()
        .atMost(java.time.Duration.ofMinutes(1))
        .until(() -> names(traceOf("process payments")).containsAll(expected));

    String trace = traceOf("process payments");
    List<Span> ours =
        collector.spans().stream()
            .filter(s -> OtlpCollector.hex(s.getTraceId()).equals(trace))
            .toList();
    Span request =
        ours.stream()
            .filter(s -> s.getKind() == Span.SpanKind.SPAN_KIND_SERVER)
            .filter(s -> s.getName().contains("/orders"))
            .findFirst()
            .orElseThrow(() -> new AssertionError("no server span in " + names(trace)));
    // The order's hold (OrderHoldExpired, scheduled 15 minutes ahead) is recorded in the same
    // request: a second "create orders" span, never sent here. The order's own is the sent one's.
    Span createOrder = created(ours, "orders");
    Span processOrder = one(ours, "process orders");
    Span createPayment = one(ours, "create payments");
    Span processPayment = one(ours, "process payments");
    assertThat(createOrder.getKind()).isEqualTo(Span.SpanKind.SPAN_KIND_PRODUCER);
    assertThat(OtlpCollector.hex(createOrder.getParentSpanId()))
        .as("the order event is recorded inside the request's span")
        .isEqualTo(OtlpCollector.hex(request.getSpanId()));
    for (String destination : List.of("orders", "payments")) {
      Span create = created(ours, destination);
      Span outbox = one(ours, "outbox " + destination);
      Span send = one(ours, "send " + destination);
      Span process = one(ours, "process " + destination);
      assertThat(OtlpCollector.hex(outbox.getParentSpanId()))
          .isEqualTo(OtlpCollector.hex(create.getSpanId()));
      assertThat(outbox.getLinksList())
          .as("the time in the outbox is linked to its producer span")
          .anySatisfy(
              l ->
                  assertThat(OtlpCollector.hex(l.getSpanId()))
                      .isEqualTo(OtlpCollector.hex(create.getSpanId())));
      assertThat(outbox.getStartTimeUnixNano()).isLessThanOrEqualTo(send.getStartTimeUnixNano());
      assertThat(send.getKind()).isEqualTo(Span.SpanKind.SPAN_KIND_PRODUCER);
      assertThat(OtlpCollector.hex(send.getParentSpanId()))
          .isEqualTo(OtlpCollector.hex(create.getSpanId()));
      assertThat(process.getKind()).isEqualTo(Span.SpanKind.SPAN_KIND_CONSUMER);
      assertThat(OtlpCollector.hex(process.getParentSpanId()))
          .as("the consumer span's parent is the context the event carried")
          .isEqualTo(OtlpCollector.hex(create.getSpanId()));
    }
    assertThat(OtlpCollector.hex(createPayment.getParentSpanId()))
        .as("the charge records the payment event inside its consumer span")
        .isEqualTo(OtlpCollector.hex(processOrder.getSpanId()));
    assertThat(processPayment.getStatus().getCode())
        .isNotEqualTo(io.opentelemetry.proto.trace.v1.Status.StatusCode.STATUS_CODE_ERROR);
  }

  private String traceOf(String name) {
    return collector.spans().stream()
        .filter(s -> s.getName().equals(name))
        .map(s -> OtlpCollector.hex(s.getTraceId()))
        .findFirst()
        .orElse("");
  }

  private List<String> names(String trace) {
    return collector.spans().stream()
        .filter(s -> OtlpCollector.hex(s.getTraceId()).equals(trace))
        .map(Span::getName)
        .toList();
  }

  /** The producer span of the event that was sent to the destination (the parent of its send). */
  private static Span created(List<Span> spans, String destination) {
    Span send = one(spans, "send " + destination);
    return spans.stream()
        .filter(s -> s.getName().equals("create " + destination))
        .filter(s -> s.getSpanId().equals(send.getParentSpanId()))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no producer span of the sent " + destination));
  }

  private static Span one(List<Span> spans, String name) {
    List<Span> found = spans.stream().filter(s -> s.getName().equals(name)).toList();
    assertThat(found).as(name).hasSize(1);
    return found.get(0);
  }

  record Effect(int attempt, boolean inTransaction) {}

  private String send(String mode, String payload) throws Exception {
    return send(mode, payload, "");
  }

  private String send(String mode, String payload, String id) throws Exception {
    HttpResponse<String> r =
        http.send(
            HttpRequest.newBuilder(
                    URI.create(
                        server.url()
                            + "/reactive-it/send?mode="
                            + mode
                            + "&key=k&payload="
                            + URLEncoder.encode(payload, StandardCharsets.UTF_8)
                            + "&id="
                            + URLEncoder.encode(id, StandardCharsets.UTF_8)))
                .POST(HttpRequest.BodyPublishers.noBody())
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return r.body();
  }

  private List<Effect> awaitEffects(String payload, int count) {
    return Awaitility.await()
        .atMost(Duration.ofMinutes(1))
        .until(() -> effects(payload), e -> e.size() >= count);
  }

  private Connection db() throws Exception {
    return DriverManager.getConnection(ADMIN_URL + "?currentSchema=" + schema, "postgres", "");
  }

  private List<Effect> effects(String payload) throws Exception {
    try (Connection c = db();
        PreparedStatement s =
            c.prepareStatement(
                "SELECT attempt, in_transaction FROM rm_effect WHERE payload = ? ORDER BY attempt")) {
      s.setString(1, payload);
      List<Effect> out = new ArrayList<>();
      try (ResultSet rs = s.executeQuery()) {
        while (rs.next()) {
          out.add(new Effect(rs.getInt(1), rs.getBoolean(2)));
        }
      }
      return out;
    }
  }

  private long outboxRows(String payload) throws Exception {
    try (Connection c = db();
        PreparedStatement s =
            c.prepareStatement(
                "SELECT COUNT(*) FROM postbox_outbox WHERE destination = 'rm-events'"
                    + " AND convert_from(payload, 'UTF8') = ?")) {
      s.setString(1, payload);
      try (ResultSet rs = s.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  private String outboxColumn(String payload, String column) throws Exception {
    try (Connection c = db();
        PreparedStatement s =
            c.prepareStatement(
                "SELECT "
                    + column // one of the test's own column names, not input
                    + " FROM postbox_outbox WHERE convert_from(payload, 'UTF8') = ?")) {
      s.setString(1, payload);
      try (ResultSet rs = s.executeQuery()) {
        return rs.next() ? rs.getString(1) : null;
      }
    }
  }

  /** The open dead letter's reason and error, or null. */
  private String deadLetter(String payload) throws Exception {
    try (Connection c = db();
        PreparedStatement s =
            c.prepareStatement(
                "SELECT reason, error FROM postbox_dead_letter WHERE subscription = ?"
                    + " AND convert_from(payload, 'UTF8') = ?")) {
      s.setString(1, SUBSCRIPTION);
      s.setString(2, payload);
      try (ResultSet rs = s.executeQuery()) {
        return rs.next() ? rs.getString(1) + " " + rs.getString(2) : null;
      }
    }
  }

  private long duplicates() throws Exception {
    try (Connection c = db();
        PreparedStatement s =
            c.prepareStatement(
                "SELECT duplicates FROM postbox_inbox_counter WHERE subscription = ?")) {
      s.setString(1, SUBSCRIPTION);
      try (ResultSet rs = s.executeQuery()) {
        return rs.next() ? rs.getLong(1) : 0;
      }
    }
  }
}
