package dev.postbox.runtime.jakarta;

import dev.postbox.runtime.api.OutboxEvent;
import dev.postbox.spi.Envelope;
import jakarta.enterprise.context.RequestScoped;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.container.ContainerRequestFilter;
import jakarta.ws.rs.ext.Provider;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

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

  private static final Pattern TRACEPARENT =
      Pattern.compile("([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}");

  /** A tracestate list member: {@code key=value} as W3C Trace Context section 3.3.1 defines. */
  private static final Pattern TRACESTATE_MEMBER =
      Pattern.compile(
          "(?:[a-z][_0-9a-z\\-*/]{0,255}|[a-z0-9][_0-9a-z\\-*/]{0,240}@[a-z][_0-9a-z\\-*/]{0,13})"
              + "=[\\x20-\\x2b\\x2d-\\x3c\\x3e-\\x7e]{0,255}[\\x21-\\x2b\\x2d-\\x3c\\x3e-\\x7e]");

  /** At most this many characters of tracestate are carried on (the spec asks for 512). */
  static final int MAX_TRACESTATE_LENGTH = 512;

  /**
   * A valid {@code traceparent} (W3C Trace Context, version 00 format; version ff and all-zero ids
   * are invalid), or null.
   */
  static String validTraceparent(String value) {
    if (value == null) {
      return null;
    }
    Matcher m = TRACEPARENT.matcher(value.trim());
    if (!m.matches()
        || m.group(1).equals("ff")
        || m.group(2).chars().allMatch(ch -> ch == '0')
        || m.group(3).chars().allMatch(ch -> ch == '0')) {
      return null;
    }
    return value.trim();
  }

  /**
   * A {@code tracestate} fit to carry on, or null: the spec says an invalid one is dropped, not
   * passed on. Invalid here: longer than {@value #MAX_TRACESTATE_LENGTH} characters, more than 32
   * members, or any member not of the form {@code key=value}.
   */
  static String validTracestate(String value) {
    if (value == null || value.isBlank() || value.length() > MAX_TRACESTATE_LENGTH) {
      return null;
    }
    String[] members = value.split(",", -1);
    if (members.length > 32) {
      return null;
    }
    StringBuilder out = new StringBuilder();
    for (String member : members) {
      String m = member.strip();
      if (m.isEmpty()) {
        continue; // empty list members are allowed, and dropped
      }
      if (!TRACESTATE_MEMBER.matcher(m).matches()) {
        return null;
      }
      out.append(out.length() == 0 ? "" : ",").append(m);
    }
    return out.length() == 0 ? null : out.toString();
  }

  /**
   * Captures the incoming trace headers of each JAX-RS request, validated as W3C Trace Context
   * says: an invalid {@code traceparent} is ignored, and with it the {@code tracestate}; an invalid
   * or oversized {@code tracestate} is dropped.
   */
  @Provider
  public static class Filter implements ContainerRequestFilter {
    @jakarta.inject.Inject TraceContext context;

    @Override
    public void filter(ContainerRequestContext request) {
      String parent = validTraceparent(request.getHeaderString(Envelope.TRACEPARENT));
      if (parent != null) {
        context.capture(parent, validTracestate(request.getHeaderString(Envelope.TRACESTATE)));
      }
    }
  }
}
