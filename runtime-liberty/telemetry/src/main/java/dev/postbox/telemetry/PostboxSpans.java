package dev.postbox.telemetry;

import dev.postbox.runtime.api.EventTracing;
import dev.postbox.runtime.api.OutboxEvent;
import dev.postbox.runtime.api.OutboxRow;
import dev.postbox.runtime.api.RelayListener;
import dev.postbox.spi.Envelope;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.TextMapGetter;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * The spans of an event's way through Postbox, in the trace of what caused it:
 *
 * <ol>
 *   <li>{@code create <destination>} (producer), around the outbox write, a child of the current
 *       span (the HTTP request's, or the handler's that records it); its context becomes the
 *       event's {@code traceparent}, which the broker carries on;
 *   <li>{@code outbox <destination>} (internal), the event's time in the outbox, from its row's
 *       creation to the relay's publish, linked to the producer span;
 *   <li>{@code send <destination>} (producer), the relay's publish, until its rows are marked;
 *   <li>{@code process <destination>} (consumer), around the inbox handler, a child of the
 *       propagated context, current while the handler runs.
 * </ol>
 *
 * Spans 2 to 4 are children of span 1, so the whole way is one trace. Rows and deliveries that
 * carry no trace context (recorded before spans were turned on, or by another producer) get no
 * relay spans, and a consumer span of their own. A failure is reported by the exception's class
 * only (never its message or stack trace, which may hold payload). Nothing here may fail an event:
 * a tracer that throws is logged once and the work goes on without spans. Plain Java over the
 * OpenTelemetry API: when the SDK is off (MicroProfile Telemetry's default) every span is a no-op
 * and events are left as they are.
 */
public final class PostboxSpans implements EventTracing {

  static final AttributeKey<String> SYSTEM = AttributeKey.stringKey("messaging.system");
  static final AttributeKey<String> DESTINATION =
      AttributeKey.stringKey("messaging.destination.name");
  static final AttributeKey<String> OPERATION = AttributeKey.stringKey("messaging.operation.type");
  static final AttributeKey<String> MESSAGE_ID = AttributeKey.stringKey("messaging.message.id");
  static final AttributeKey<String> GROUP = AttributeKey.stringKey("messaging.consumer.group.name");
  static final AttributeKey<String> ERROR_TYPE = AttributeKey.stringKey("error.type");
  static final AttributeKey<String> TYPE = AttributeKey.stringKey("postbox.event.type");

  private static final W3CTraceContextPropagator W3C = W3CTraceContextPropagator.getInstance();

  private static final TextMapGetter<Map<String, String>> HEADERS =
      new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(Map<String, String> carrier) {
          return carrier.keySet();
        }

        @Override
        public String get(Map<String, String> carrier, String key) {
          return carrier == null ? null : carrier.get(key);
        }
      };

  private static final System.Logger LOG = System.getLogger(PostboxSpans.class.getName());

  private final Tracer tracer;
  private final Relay relay = new Relay();
  private final java.util.concurrent.atomic.AtomicBoolean warned =
      new java.util.concurrent.atomic.AtomicBoolean();

  public PostboxSpans(OpenTelemetry openTelemetry) {
    this.tracer = openTelemetry.getTracer("dev.postbox", "1");
  }

  @Override
  public String record(OutboxEvent event, Function<OutboxEvent, String> record) {
    Span span;
    OutboxEvent traced;
    try {
      // The event's own context wins (set by the application, or carried on from its cause);
      // else the current span's (the request's, the handler's); else a new trace.
      Context own = W3C.extract(Context.root(), event.headers(), HEADERS);
      Context parent =
          Span.fromContext(own).getSpanContext().isValid()
              ? own
              : Span.current().getSpanContext().isValid() ? Context.current() : Context.root();
      span =
          tracer
              .spanBuilder("create " + event.destination())
              .setSpanKind(SpanKind.PRODUCER)
              .setParent(parent)
              .setAttribute(SYSTEM, "postbox")
              .setAttribute(OPERATION, "create")
              .setAttribute(DESTINATION, event.destination())
              .setAttribute(MESSAGE_ID, event.eventId())
              .setAttribute(TYPE, event.type())
              .startSpan();
      traced = withContext(event, span, parent);
    } catch (RuntimeException tracingFailed) {
      failedOnce(tracingFailed);
      return record.apply(event); // spans are never worth an event
    }
    try (Scope ignored = span.makeCurrent()) {
      return record.apply(traced);
    } catch (RuntimeException | Error e) {
      failed(span, e);
      throw e;
    } finally {
      end(span, null);
    }
  }

  /**
   * The event carrying a new span's context as its traceparent (its tracestate kept), or the event
   * as it was: with the SDK off the "span" is only its parent again, and an event whose headers
   * would then be too many or too long keeps its own.
   */
  private static OutboxEvent withContext(OutboxEvent event, Span span, Context parent) {
    SpanContext made = span.getSpanContext();
    if (!made.isValid() || made.equals(Span.fromContext(parent).getSpanContext())) {
      return event;
    }
    Map<String, String> carrier = new HashMap<>(2);
    W3C.inject(Context.root().with(span), carrier, Map::put);
    OutboxEvent.Builder b = event.toBuilder();
    carrier.forEach(b::header);
    try {
      return b.build();
    } catch (IllegalArgumentException tooMuch) {
      return event;
    }
  }

  @Override
  public RelayListener relay() {
    return relay;
  }

  @Override
  public void handle(String subscription, Envelope event, Handler handler) throws Exception {
    Span span;
    try {
      int slash = subscription.lastIndexOf('/');
      String destination = slash < 0 ? subscription : subscription.substring(0, slash);
      Context parent = W3C.extract(Context.root(), event.headers(), HEADERS);
      span =
          tracer
              .spanBuilder("process " + destination)
              .setSpanKind(SpanKind.CONSUMER)
              .setParent(parent)
              .setAttribute(SYSTEM, "postbox")
              .setAttribute(OPERATION, "process")
              .setAttribute(DESTINATION, destination)
              .setAttribute(GROUP, slash < 0 ? "" : subscription.substring(slash + 1))
              .setAttribute(MESSAGE_ID, event.id())
              .setAttribute(TYPE, event.type())
              .startSpan();
    } catch (RuntimeException tracingFailed) {
      failedOnce(tracingFailed);
      handler.run();
      return;
    }
    try (Scope ignored = span.makeCurrent()) {
      handler.run();
    } catch (Exception | Error e) {
      failed(span, e);
      throw e;
    } finally {
      end(span, null);
    }
  }

  /**
   * Marks a span failed with the exception's class only: its message and stack trace may hold
   * payload or customer data, which the trace backend must not get.
   */
  private static void failed(Span span, Throwable e) {
    try {
      span.setAttribute(ERROR_TYPE, e.getClass().getName());
      span.setStatus(StatusCode.ERROR, e.getClass().getSimpleName());
    } catch (RuntimeException ignored) {
      // the span is only a report
    }
  }

  /** Ends a span at a time (or now), never letting the tracer's failure out. */
  private void end(Span span, Instant at) {
    try {
      if (at == null) {
        span.end();
      } else {
        span.end(at);
      }
    } catch (RuntimeException tracingFailed) {
      failedOnce(tracingFailed);
    }
  }

  private void failedOnce(RuntimeException e) {
    if (warned.compareAndSet(false, true)) {
      LOG.log(
          System.Logger.Level.WARNING, "Postbox's spans failed (events go on without): " + e, e);
    }
  }

  /** The relay's spans, made after the fact with the times the relay reports. */
  private final class Relay implements RelayListener {

    /** When the batch on this relay thread began to publish. */
    private final ThreadLocal<Instant> publishing = new ThreadLocal<>();

    @Override
    public void publishing(List<OutboxRow> batch) {
      publishing.set(Instant.now());
    }

    @Override
    public void published(List<OutboxRow> rows, Instant committedAt) {
      Instant start = since(committedAt);
      for (OutboxRow row : rows) {
        Context parent = W3C.extract(Context.root(), row.headers(), HEADERS);
        SpanContext producer = Span.fromContext(parent).getSpanContext();
        if (!producer.isValid()) {
          continue; // recorded without a trace: no spans of its own
        }
        Instant created = row.createdAt().isAfter(start) ? start : row.createdAt();
        tracer
            .spanBuilder("outbox " + row.destination())
            .setSpanKind(SpanKind.INTERNAL)
            .setParent(parent)
            .addLink(producer)
            .setAttribute(SYSTEM, "postbox")
            .setAttribute(DESTINATION, row.destination())
            .setAttribute(MESSAGE_ID, row.eventId())
            .setStartTimestamp(created)
            .startSpan()
            .end(start);
        send(row, parent, start).end(committedAt.isBefore(start) ? start : committedAt);
      }
    }

    @Override
    public void failed(OutboxRow row, String error, boolean parked) {
      Context parent = W3C.extract(Context.root(), row.headers(), HEADERS);
      if (!Span.fromContext(parent).getSpanContext().isValid()) {
        return;
      }
      Instant now = Instant.now();
      Span span = send(row, parent, since(now));
      span.setStatus(
          StatusCode.ERROR,
          error == null || error.length() <= 200 ? error : error.substring(0, 200));
      end(span, now);
    }

    private Span send(OutboxRow row, Context parent, Instant start) {
      return tracer
          .spanBuilder("send " + row.destination())
          .setSpanKind(SpanKind.PRODUCER)
          .setParent(parent)
          .setAttribute(SYSTEM, "postbox")
          .setAttribute(OPERATION, "send")
          .setAttribute(DESTINATION, row.destination())
          .setAttribute(MESSAGE_ID, row.eventId())
          .setStartTimestamp(start)
          .startSpan();
    }

    private Instant since(Instant fallback) {
      Instant t = publishing.get();
      return t == null || t.isAfter(fallback) ? fallback : t;
    }
  }
}
