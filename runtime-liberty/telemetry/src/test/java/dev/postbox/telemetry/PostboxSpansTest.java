package dev.postbox.telemetry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.runtime.api.OutboxEvent;
import dev.postbox.runtime.api.OutboxRow;
import dev.postbox.spi.Envelope;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class PostboxSpansTest {

  private final InMemorySpanExporter exported = InMemorySpanExporter.create();
  private final OpenTelemetrySdk sdk =
      OpenTelemetrySdk.builder()
          .setTracerProvider(
              SdkTracerProvider.builder()
                  .addSpanProcessor(SimpleSpanProcessor.create(exported))
                  .build())
          .build();
  private final PostboxSpans spans = new PostboxSpans(sdk);

  private static OutboxEvent order() {
    return OutboxEvent.builder()
        .destination("orders")
        .key("o-1")
        .type("OrderCaptured")
        .json("{}")
        .build();
  }

  private static OutboxRow row(OutboxEvent e, Instant createdAt) {
    return new OutboxRow(
        1,
        0,
        e.eventId(),
        e.destination(),
        e.key(),
        e.type(),
        e.source(),
        e.subject(),
        e.contentType(),
        e.headers(),
        e.payload(),
        e.time(),
        createdAt,
        0);
  }

  private static Envelope delivered(OutboxEvent e) {
    return new Envelope(
        e.eventId(),
        e.source(),
        e.type(),
        e.subject(),
        e.key(),
        e.time(),
        e.contentType(),
        e.headers(),
        e.payload());
  }

  private SpanData named(String name) {
    return exported.getFinishedSpanItems().stream()
        .filter(s -> s.getName().equals(name))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no span " + name + ": " + exported));
  }

  @Test
  void theFourSpansOfAnEventAreOneTraceUnderTheRequestAndAFollowUpContinuesIt() throws Exception {
    Span request = sdk.getTracer("test").spanBuilder("POST /orders").startSpan();
    AtomicReference<OutboxEvent> recorded = new AtomicReference<>();
    try (Scope ignored = request.makeCurrent()) {
      spans.record(
          order(),
          e -> {
            recorded.set(e);
            return e.eventId();
          });
    } finally {
      request.end();
    }
    OutboxEvent event = recorded.get();
    Instant created = Instant.now().minusMillis(250);
    OutboxRow row = row(event, created);
    spans.relay().publishing(List.of(row));
    spans.relay().published(List.of(row), Instant.now());
    AtomicReference<OutboxEvent> followUp = new AtomicReference<>();
    spans.handle(
        "orders/payments",
        delivered(event),
        () ->
            spans.record(
                OutboxEvent.builder()
                    .destination("payments")
                    .type("PaymentReceived")
                    .payload("{}".getBytes(StandardCharsets.UTF_8))
                    .build(),
                e -> {
                  followUp.set(e);
                  return e.eventId();
                }));

    SpanData create = named("create orders");
    SpanData outbox = named("outbox orders");
    SpanData send = named("send orders");
    SpanData process = named("process orders");
    SpanData next = named("create payments");
    String trace = request.getSpanContext().getTraceId();
    assertThat(List.of(create, outbox, send, process, next))
        .allSatisfy(s -> assertThat(s.getTraceId()).isEqualTo(trace));
    assertThat(create.getKind()).isEqualTo(SpanKind.PRODUCER);
    assertThat(create.getParentSpanId()).isEqualTo(request.getSpanContext().getSpanId());
    assertThat(event.headers().get(Envelope.TRACEPARENT))
        .as("the event carries the producer span on")
        .contains(create.getSpanId());
    assertThat(outbox.getParentSpanId()).isEqualTo(create.getSpanId());
    assertThat(outbox.getLinks())
        .singleElement()
        .satisfies(l -> assertThat(l.getSpanContext().getSpanId()).isEqualTo(create.getSpanId()));
    assertThat(outbox.getStartEpochNanos())
        .as("the time in the outbox starts when the row was created")
        .isEqualTo(TimeUnit.SECONDS.toNanos(created.getEpochSecond()) + created.getNano());
    assertThat(outbox.getEndEpochNanos()).isEqualTo(send.getStartEpochNanos());
    assertThat(send.getKind()).isEqualTo(SpanKind.PRODUCER);
    assertThat(send.getParentSpanId()).isEqualTo(create.getSpanId());
    assertThat(process.getKind()).isEqualTo(SpanKind.CONSUMER);
    assertThat(process.getParentSpanId()).isEqualTo(create.getSpanId());
    assertThat(process.getAttributes().get(PostboxSpans.GROUP)).isEqualTo("payments");
    assertThat(next.getParentSpanId())
        .as("an event recorded by the handler is a child of the consumer span")
        .isEqualTo(process.getSpanId());
    assertThat(followUp.get().headers().get(Envelope.TRACEPARENT)).contains(next.getSpanId());
  }

  @Test
  void aFailingHandlerEndsItsSpanAsAnErrorAndStillThrows() {
    OutboxEvent event = order(); // no trace context: the consumer span is a root
    assertThatThrownBy(
            () ->
                spans.handle(
                    "orders/payments",
                    delivered(event),
                    () -> {
                      throw new IllegalStateException("card declined");
                    }))
        .hasMessage("card declined");
    SpanData process = named("process orders");
    assertThat(process.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
    assertThat(process.getAttributes().get(PostboxSpans.ERROR_TYPE))
        .isEqualTo(IllegalStateException.class.getName());
    assertThat(process.getEvents())
        .as("no exception event: its message and stack trace may hold payload")
        .isEmpty();
    assertThat(process.getStatus().getDescription()).doesNotContain("card declined");
  }

  @Test
  void anEventsOwnTraceparentIsItsParentAndWithTheSdkOffItIsLeftAsItIs() {
    String own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    OutboxEvent mine = order().toBuilder().header(Envelope.TRACEPARENT, own).build();
    Span unrelated = sdk.getTracer("test").spanBuilder("unrelated").startSpan();
    AtomicReference<OutboxEvent> recorded = new AtomicReference<>();
    try (Scope ignored = unrelated.makeCurrent()) {
      spans.record(
          mine,
          e -> {
            recorded.set(e);
            return e.eventId();
          });
    } finally {
      unrelated.end();
    }
    SpanData create = named("create orders");
    assertThat(create.getTraceId()).isEqualTo("0af7651916cd43dd8448eb211c80319c");
    assertThat(create.getParentSpanId()).isEqualTo("b7ad6b7169203331");
    assertThat(recorded.get().headers().get(Envelope.TRACEPARENT))
        .contains("0af7651916cd43dd8448eb211c80319c")
        .contains(create.getSpanId());

    PostboxSpans off = new PostboxSpans(OpenTelemetry.noop());
    AtomicReference<OutboxEvent> untouched = new AtomicReference<>();
    try (Scope ignored = Span.wrap(create.getSpanContext()).makeCurrent()) {
      off.record(
          mine,
          e -> {
            untouched.set(e);
            return e.eventId();
          });
    }
    assertThat(untouched.get()).isSameAs(mine);
  }

  @Test
  void aTracerThatThrowsNeverFailsARecordOrAHandler() throws Exception {
    OpenTelemetrySdk broken =
        OpenTelemetrySdk.builder()
            .setTracerProvider(
                SdkTracerProvider.builder()
                    .addSpanProcessor(
                        new io.opentelemetry.sdk.trace.SpanProcessor() {
                          @Override
                          public void onStart(
                              io.opentelemetry.context.Context parent,
                              io.opentelemetry.sdk.trace.ReadWriteSpan span) {
                            throw new IllegalStateException("broken processor");
                          }

                          @Override
                          public boolean isStartRequired() {
                            return true;
                          }

                          @Override
                          public void onEnd(io.opentelemetry.sdk.trace.ReadableSpan span) {
                            throw new IllegalStateException("broken processor");
                          }

                          @Override
                          public boolean isEndRequired() {
                            return true;
                          }
                        })
                    .build())
            .build();
    PostboxSpans spansOfBroken = new PostboxSpans(broken);
    assertThat(spansOfBroken.record(order(), e -> "recorded")).isEqualTo("recorded");
    AtomicReference<Boolean> ran = new AtomicReference<>(false);
    spansOfBroken.handle("orders/payments", delivered(order()), () -> ran.set(true));
    assertThat(ran.get()).isTrue();
  }

  @Test
  void aFailedPublishIsAnErrorSpanAndARowWithoutTraceGetsNone() {
    AtomicReference<OutboxEvent> recorded = new AtomicReference<>();
    spans.record(
        order(),
        e -> {
          recorded.set(e);
          return e.eventId();
        });
    OutboxRow traced = row(recorded.get(), Instant.now());
    OutboxRow untraced = row(order(), Instant.now());
    spans.relay().publishing(List.of(traced, untraced));
    spans.relay().failed(traced, "broker down", false);
    spans.relay().failed(untraced, "broker down", false);

    assertThat(exported.getFinishedSpanItems())
        .filteredOn(s -> s.getName().equals("send orders"))
        .singleElement()
        .satisfies(
            s -> {
              assertThat(s.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
              assertThat(s.getStatus().getDescription()).isEqualTo("broker down");
            });
  }

  @Test
  void withTheSdkOffEventsAreLeftAsTheyAreAndHandlersStillRun() throws Exception {
    PostboxSpans off = new PostboxSpans(OpenTelemetry.noop());
    OutboxEvent original = order();
    AtomicReference<OutboxEvent> recorded = new AtomicReference<>();
    off.record(
        original,
        e -> {
          recorded.set(e);
          return e.eventId();
        });
    assertThat(recorded.get()).isSameAs(original);
    AtomicReference<Boolean> ran = new AtomicReference<>(false);
    off.handle("orders/payments", delivered(original), () -> ran.set(true));
    assertThat(ran.get()).isTrue();
  }
}
