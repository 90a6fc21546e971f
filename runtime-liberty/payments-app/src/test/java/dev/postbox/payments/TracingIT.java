package dev.postbox.payments;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse;
import io.opentelemetry.proto.trace.v1.ResourceSpans;
import io.opentelemetry.proto.trace.v1.ScopeSpans;
import io.opentelemetry.proto.trace.v1.Span;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.zip.GZIPInputStream;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Traces on a real Liberty: the payments WAR as built (mpTelemetry-2.1 and postbox-telemetry in it,
 * spans off by default), turned on with MicroProfile Config as an operator would, exporting OTLP
 * (http/protobuf) to a collector this test runs. One {@code POST /orders} must give one trace that
 * covers the request, the order event's four spans, the charge, the payment event's four spans and
 * the notification.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TracingIT {

  private final List<Span> spans = new CopyOnWriteArrayList<>();
  private HttpServer collector;
  private VariantServer server;

  @BeforeAll
  void start() throws IOException {
    collector = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    collector.createContext(
        "/v1/traces",
        exchange -> {
          try (InputStream body = exchange.getRequestBody()) {
            InputStream in =
                "gzip".equalsIgnoreCase(exchange.getRequestHeaders().getFirst("Content-Encoding"))
                    ? new GZIPInputStream(body)
                    : body;
            ExportTraceServiceRequest request = ExportTraceServiceRequest.parseFrom(in);
            for (ResourceSpans rs : request.getResourceSpansList()) {
              for (ScopeSpans ss : rs.getScopeSpansList()) {
                spans.addAll(ss.getSpansList());
              }
            }
            byte[] answer = ExportTraceServiceResponse.getDefaultInstance().toByteArray();
            exchange.getResponseHeaders().add("Content-Type", "application/x-protobuf");
            exchange.sendResponseHeaders(200, answer.length);
            exchange.getResponseBody().write(answer);
          } finally {
            exchange.close();
          }
        });
    collector.start();
    server =
        new VariantServer(
            "artemis",
            "payments-tracing",
            Map.ofEntries(
                Map.entry("payments.embedded-artemis", "true"),
                Map.entry("postbox.broker", "artemis"),
                Map.entry("postbox.broker.url", "vm://0"),
                Map.entry("otel.sdk.disabled", "false"),
                Map.entry("otel.service.name", "payments-tracing-it"),
                Map.entry("otel.traces.exporter", "otlp"),
                Map.entry("otel.exporter.otlp.traces.protocol", "http/protobuf"),
                Map.entry(
                    "otel.exporter.otlp.traces.endpoint",
                    "http://127.0.0.1:" + collector.getAddress().getPort() + "/v1/traces"),
                Map.entry("otel.metrics.exporter", "none"),
                Map.entry("otel.logs.exporter", "none"),
                Map.entry("otel.bsp.schedule.delay", "200")));
    server.start();
  }

  @AfterAll
  void stop() {
    if (server != null) {
      server.close();
    }
    if (collector != null) {
      collector.stop(0);
    }
  }

  @Test
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
    List<Span> ours = spans.stream().filter(s -> hex(s.getTraceId()).equals(trace)).toList();
    Span request =
        ours.stream()
            .filter(s -> s.getKind() == Span.SpanKind.SPAN_KIND_SERVER)
            .filter(s -> s.getName().contains("/orders"))
            .findFirst()
            .orElseThrow(() -> new AssertionError("no server span in " + names(trace)));
    Span createOrder = one(ours, "create orders");
    Span processOrder = one(ours, "process orders");
    Span createPayment = one(ours, "create payments");
    Span processPayment = one(ours, "process payments");
    assertThat(createOrder.getKind()).isEqualTo(Span.SpanKind.SPAN_KIND_PRODUCER);
    assertThat(hex(createOrder.getParentSpanId()))
        .as("the order event is recorded inside the request's span")
        .isEqualTo(hex(request.getSpanId()));
    for (String destination : List.of("orders", "payments")) {
      Span create = one(ours, "create " + destination);
      Span outbox = one(ours, "outbox " + destination);
      Span send = one(ours, "send " + destination);
      Span process = one(ours, "process " + destination);
      assertThat(hex(outbox.getParentSpanId())).isEqualTo(hex(create.getSpanId()));
      assertThat(outbox.getLinksList())
          .as("the time in the outbox is linked to its producer span")
          .anySatisfy(l -> assertThat(hex(l.getSpanId())).isEqualTo(hex(create.getSpanId())));
      assertThat(outbox.getStartTimeUnixNano()).isLessThanOrEqualTo(send.getStartTimeUnixNano());
      assertThat(send.getKind()).isEqualTo(Span.SpanKind.SPAN_KIND_PRODUCER);
      assertThat(hex(send.getParentSpanId())).isEqualTo(hex(create.getSpanId()));
      assertThat(process.getKind()).isEqualTo(Span.SpanKind.SPAN_KIND_CONSUMER);
      assertThat(hex(process.getParentSpanId()))
          .as("the consumer span's parent is the context the event carried")
          .isEqualTo(hex(create.getSpanId()));
    }
    assertThat(hex(createPayment.getParentSpanId()))
        .as("the charge records the payment event inside its consumer span")
        .isEqualTo(hex(processOrder.getSpanId()));
    assertThat(processPayment.getStatus().getCode())
        .isNotEqualTo(io.opentelemetry.proto.trace.v1.Status.StatusCode.STATUS_CODE_ERROR);
  }

  private String traceOf(String name) {
    return spans.stream()
        .filter(s -> s.getName().equals(name))
        .map(s -> hex(s.getTraceId()))
        .findFirst()
        .orElse("");
  }

  private List<String> names(String trace) {
    return spans.stream()
        .filter(s -> hex(s.getTraceId()).equals(trace))
        .map(Span::getName)
        .toList();
  }

  private static Span one(List<Span> spans, String name) {
    List<Span> found = spans.stream().filter(s -> s.getName().equals(name)).toList();
    assertThat(found).as(name).hasSize(1);
    return found.get(0);
  }

  private static String hex(com.google.protobuf.ByteString id) {
    return HexFormat.of().formatHex(id.toByteArray());
  }
}
