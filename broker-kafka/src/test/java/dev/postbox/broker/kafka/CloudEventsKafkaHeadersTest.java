package dev.postbox.broker.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.spi.Envelope;
import dev.postbox.spi.MalformedMessageException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;

class CloudEventsKafkaHeadersTest {

  private final Envelope envelope =
      Envelope.builder()
          .id("e-1")
          .source("urn:shop")
          .type("OrderCaptured")
          .subject("order/7")
          .key("order-7")
          .time(Instant.parse("2026-01-02T03:04:05.678901Z"))
          .dataContentType("application/json")
          .header("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
          .header("tenant", "acme")
          .payload("{}")
          .build();

  @Test
  void writesTheBinaryBinding() {
    Headers h = CloudEventsKafkaHeaders.toHeaders(envelope);
    assertThat(text(h, "ce_specversion")).isEqualTo("1.0");
    assertThat(text(h, "ce_id")).isEqualTo("e-1");
    assertThat(text(h, "ce_source")).isEqualTo("urn:shop");
    assertThat(text(h, "ce_type")).isEqualTo("OrderCaptured");
    assertThat(text(h, "ce_subject")).isEqualTo("order/7");
    assertThat(text(h, "ce_time")).isEqualTo("2026-01-02T03:04:05.678901Z");
    assertThat(text(h, "content-type")).isEqualTo("application/json");
    assertThat(text(h, "ce_tenant")).isEqualTo("acme");
    assertThat(text(h, "traceparent")).as("W3C header under its own name").startsWith("00-4bf9");
    assertThat(h.lastHeader("ce_traceparent")).isNull();
    assertThat(new String(CloudEventsKafkaHeaders.keyBytes(envelope), StandardCharsets.UTF_8))
        .isEqualTo("order-7");
  }

  @Test
  void roundTrips() {
    Envelope back =
        CloudEventsKafkaHeaders.fromRecord(
            CloudEventsKafkaHeaders.keyBytes(envelope),
            envelope.payload(),
            CloudEventsKafkaHeaders.toHeaders(envelope));
    assertThat(back).isEqualTo(envelope);
  }

  @Test
  void foreignHeadersAreIgnored() {
    Headers h = CloudEventsKafkaHeaders.toHeaders(envelope);
    h.add("X-Legacy", "x".getBytes(StandardCharsets.UTF_8));
    assertThat(CloudEventsKafkaHeaders.fromRecord(null, new byte[0], h).headers())
        .doesNotContainKey("X-Legacy");
  }

  @Test
  void aRecordWithoutCloudEventsHeadersIsMalformedWithItsBytes() {
    RecordHeaders h = new RecordHeaders();
    h.add("foo", "bar".getBytes(StandardCharsets.UTF_8));
    assertThatThrownBy(
            () ->
                CloudEventsKafkaHeaders.fromRecord(null, "raw".getBytes(StandardCharsets.UTF_8), h))
        .isInstanceOfSatisfying(
            MalformedMessageException.class,
            e -> {
              assertThat(e.reason()).contains("no ce_specversion");
              assertThat(e.rawPayload()).isEqualTo("raw".getBytes(StandardCharsets.UTF_8));
              assertThat(e.rawHeaders()).containsEntry("foo", "bar");
            });
  }

  @Test
  void missingIdOrBadTimeIsMalformed() {
    Headers noId = CloudEventsKafkaHeaders.toHeaders(envelope);
    noId.remove("ce_id");
    assertThatThrownBy(() -> CloudEventsKafkaHeaders.fromRecord(null, new byte[0], noId))
        .isInstanceOf(MalformedMessageException.class)
        .hasMessageContaining("id must not be null");
    Headers badTime = CloudEventsKafkaHeaders.toHeaders(envelope);
    badTime.remove("ce_time");
    badTime.add("ce_time", "yesterday".getBytes(StandardCharsets.UTF_8));
    assertThatThrownBy(() -> CloudEventsKafkaHeaders.fromRecord(null, new byte[0], badTime))
        .isInstanceOf(MalformedMessageException.class);
    Headers v2 = CloudEventsKafkaHeaders.toHeaders(envelope);
    v2.remove("ce_specversion");
    v2.add("ce_specversion", "2.0".getBytes(StandardCharsets.UTF_8));
    assertThatThrownBy(() -> CloudEventsKafkaHeaders.fromRecord(null, new byte[0], v2))
        .hasMessageContaining("unsupported CloudEvents specversion '2.0'");
  }

  private static String text(Headers h, String name) {
    return new String(h.lastHeader(name).value(), StandardCharsets.UTF_8);
  }
}
