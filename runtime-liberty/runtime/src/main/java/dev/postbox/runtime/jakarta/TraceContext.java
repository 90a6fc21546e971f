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
 * their own trace headers keep them.
 */
@RequestScoped
public class TraceContext {

  private String traceparent;
  private String tracestate;

  /** The event with the current trace context added, unless it has its own. */
  public OutboxEvent addTo(OutboxEvent e) {
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
