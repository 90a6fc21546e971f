package dev.postbox.runtime.api;

import dev.postbox.spi.Envelope;
import java.util.function.Function;

/**
 * Spans for an event's way through Postbox, if a CDI bean of this type is present (the {@code
 * postbox-telemetry} jar provides one over MicroProfile Telemetry); without one, none are made. Its
 * methods run on the threads doing the work: keep them cheap.
 */
public interface EventTracing {

  /**
   * Records an event: {@code record} writes it. A tracer starts a producer span around the write,
   * as a child of the current span (else of the event's own {@code traceparent}), and gives the
   * event that span's context as its {@code traceparent}, so every later span of the event descends
   * from it.
   *
   * @return what {@code record} returned (the event id)
   */
  default String record(OutboxEvent event, Function<OutboxEvent, String> record) {
    return record.apply(event);
  }

  /** Hears the relay: a tracer makes the spans of each row's time in the outbox and its publish. */
  default RelayListener relay() {
    return RelayListener.NONE;
  }

  /**
   * Runs an inbox handler: a tracer wraps it in a consumer span whose parent is the event's {@code
   * traceparent}, current while the handler runs (events it records continue the trace).
   */
  default void handle(String subscription, Envelope event, Handler handler) throws Exception {
    handler.run();
  }

  /** A handler call. */
  @FunctionalInterface
  interface Handler {
    void run() throws Exception;
  }

  /** No spans. */
  EventTracing NONE = new EventTracing() {};
}
