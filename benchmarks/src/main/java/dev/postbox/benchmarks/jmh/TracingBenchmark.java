package dev.postbox.benchmarks.jmh;

import dev.postbox.runtime.api.EventTracing;
import dev.postbox.runtime.api.OutboxEvent;
import dev.postbox.runtime.api.OutboxRow;
import dev.postbox.spi.Envelope;
import dev.postbox.telemetry.PostboxSpans;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.BatchSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The CPU an event's spans cost, per event: what Postbox's tracing hooks do on the recording
 * thread, the relay thread and the inbox thread for one event (record, publishing and published,
 * handle), in the same run for {@code none} (no tracer bean: {@link EventTracing#NONE}), {@code
 * off} ({@link PostboxSpans} over the no-op OpenTelemetry of MicroProfile Telemetry's default,
 * {@code otel.sdk.disabled=true}) and {@code on} (the SDK with a batch processor, its default, and
 * an exporter that counts and drops). The outbox write, the broker and the handler are not in it:
 * this is the tracing's own cost, to set beside the per-event cost of the whole way. The event
 * carries a {@code traceparent}, as one recorded in a traced request does.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(1)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 5, time = 2)
public class TracingBenchmark {

  @Param({"none", "off", "on"})
  public String tracing;

  private EventTracing tracer;
  private OpenTelemetrySdk sdk;
  private final LongAdder exported = new LongAdder();
  private final byte[] payload = "{\"orderId\":\"o-1\"}".getBytes(StandardCharsets.UTF_8);

  @Setup(Level.Trial)
  public void setUp() {
    switch (tracing) {
      case "none" -> tracer = EventTracing.NONE;
      case "off" -> tracer = new PostboxSpans(OpenTelemetry.noop());
      case "on" -> {
        sdk =
            OpenTelemetrySdk.builder()
                .setTracerProvider(
                    SdkTracerProvider.builder()
                        .addSpanProcessor(BatchSpanProcessor.builder(new Dropping()).build())
                        .build())
                .build();
        tracer = new PostboxSpans(sdk);
      }
      default -> throw new IllegalArgumentException(tracing);
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    if (sdk != null) {
      sdk.close();
    }
  }

  /** One event's way: recorded, published, handled. Returns something JMH consumes. */
  @Benchmark
  public Object event() throws Exception {
    OutboxEvent[] recorded = new OutboxEvent[1];
    tracer.record(
        OutboxEvent.builder()
            .destination("orders")
            .key("o-1")
            .type("OrderCaptured")
            // as the request filter adds it: the caller's trace context
            .header(Envelope.TRACEPARENT, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
            .payload(payload)
            .build(),
        e -> {
          recorded[0] = e;
          return e.eventId();
        });
    OutboxEvent e = recorded[0];
    OutboxRow row =
        new OutboxRow(
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
            payload,
            e.time(),
            e.time(),
            0);
    List<OutboxRow> batch = List.of(row);
    tracer.relay().publishing(batch);
    tracer.relay().published(batch, Instant.now());
    Envelope delivered =
        new Envelope(
            e.eventId(),
            e.source(),
            e.type(),
            e.subject(),
            e.key(),
            e.time(),
            e.contentType(),
            e.headers(),
            payload);
    int[] handled = new int[1];
    tracer.handle("orders/payments", delivered, () -> handled[0]++);
    return e.headers();
  }

  /** Counts what it is given and drops it. */
  private final class Dropping implements SpanExporter {
    @Override
    public CompletableResultCode export(Collection<SpanData> spans) {
      exported.add(spans.size());
      return CompletableResultCode.ofSuccess();
    }

    @Override
    public CompletableResultCode flush() {
      return CompletableResultCode.ofSuccess();
    }

    @Override
    public CompletableResultCode shutdown() {
      return CompletableResultCode.ofSuccess();
    }
  }
}
