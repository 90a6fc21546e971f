package dev.postbox.benchmarks.jmh;

import dev.postbox.spi.Envelope;
import java.time.Instant;
import java.util.UUID;

/** The event the per-delivery CPU benchmarks decode: a payments event as the relay sends it. */
public final class SampleEvent {

  private SampleEvent() {}

  /** A UUID id, a key, W3C trace context, one extension header and a ~250-byte JSON payload. */
  public static Envelope envelope() {
    return Envelope.builder()
        .id(UUID.randomUUID().toString())
        .source("urn:postbox:payments")
        .type("OrderCaptured")
        .subject("order")
        .key("customer-4711")
        .time(Instant.parse("2026-12-01T12:00:00Z"))
        .dataContentType("application/json")
        .header(Envelope.TRACEPARENT, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        .header("tenant", "acme")
        .payload(
            "{\"orderId\":\"0f8fad5b-d9cb-469f-a165-70867728950e\",\"customer\":\"customer-4711\","
                + "\"amountCents\":1999,\"currency\":\"EUR\",\"lines\":[{\"sku\":\"A-1\",\"qty\":2},"
                + "{\"sku\":\"B-7\",\"qty\":1}],\"placedAt\":\"2026-12-01T11:59:58.123Z\"}")
        .build();
  }
}
