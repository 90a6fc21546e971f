package dev.postbox.runtime.jakarta;

import dev.postbox.runtime.outbox.OutboxEvent;
import dev.postbox.spi.Envelope;
import jakarta.enterprise.context.RequestScoped;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.container.ContainerRequestFilter;
import jakarta.ws.rs.ext.Provider;

/**
 * The W3C trace context of the current request, if any, so recorded events carry it on as {@code
 * traceparent}/{@code tracestate}. A JAX-RS filter captures the incoming headers; events that set
 * their own trace headers keep them. Inside an inbox handler (no request scope on consumer threads)
 * the trace context of the event being handled is carried on instead, so a follow-up event
 * continues its cause's trace.
 */
@RequestScoped
public class TraceContext {

  /** The event an inbox handler on this thread is handling, if any. */
  private static final ThreadLocal<Envelope> HANDLING = new ThreadLocal<>();

  private String traceparent;
  private String tracestate;

  /** Runs an inbox handler with its event as the thread's trace source. */
  static void handling(Envelope event, ThrowingRunnable handler) throws Exception {
    Envelope outer = HANDLING.get();
    HANDLING.set(event);
    try {
      handler.run();
    } finally {
      if (outer == null) {
        HANDLING.remove();
      } else {
        HANDLING.set(outer);
      }
    }
  }

  /** A handler call. */
  @FunctionalInterface
  interface ThrowingRunnable {
    void run() throws Exception;
  }

  /** The event handled on this thread with its trace context added, or null if none is. */
  static OutboxEvent fromHandledEvent(OutboxEvent e) {
    Envelope cause = HANDLING.get();
    if (cause == null) {
      return null;
    }
    return with(e, cause.header(Envelope.TRACEPARENT), cause.header(Envelope.TRACESTATE));
  }

  /** The event with the current trace context added, unless it has its own. */
  public OutboxEvent addTo(OutboxEvent e) {
    return with(e, traceparent, tracestate);
  }

  private static OutboxEvent with(OutboxEvent e, String traceparent, String tracestate) {
    if (traceparent == null || e.headers().containsKey(Envelope.TRACEPARENT)) {
      return e;
    }
    OutboxEvent.Builder b = e.toBuilder();
    b.header(Envelope.TRACEPARENT, traceparent);
    if (tracestate != null) {
      b.header(Envelope.TRACESTATE, tracestate);
    }
    return b.build();
  }

  void capture(String traceparent, String tracestate) {
    this.traceparent = traceparent;
    this.tracestate = tracestate;
  }

  /** Captures the incoming trace headers of each JAX-RS request. */
  @Provider
  public static class Filter implements ContainerRequestFilter {
    @jakarta.inject.Inject TraceContext context;

    @Override
    public void filter(ContainerRequestContext request) {
      String parent = request.getHeaderString(Envelope.TRACEPARENT);
      if (parent != null && parent.matches("[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}")) {
        context.capture(parent, request.getHeaderString(Envelope.TRACESTATE));
      }
    }
  }
}
