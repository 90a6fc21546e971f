package dev.postbox.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class CloudEventsWireTest {

  private static final CloudEventsWire KEY_INSIDE =
      CloudEventsWire.binding("property", "ce_datacontenttype", "JMSXGroupID");
  private static final CloudEventsWire KEY_OUTSIDE =
      CloudEventsWire.binding("header", "content-type", null);

  private final Envelope event =
      Envelope.builder()
          .id("e-1")
          .source("urn:test")
          .type("OrderCaptured")
          .subject("order-7")
          .key("customer-1")
          .time(Instant.parse("2026-01-02T03:04:05.678901Z"))
          .dataContentType("application/json")
          .header("tenant", "acme")
          .header(Envelope.TRACEPARENT, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
          .header("blank", "")
          .payload("{\"a\":1}")
          .build();

  @Test
  void writesTheBindingsNamesInOrder() {
    assertThat(KEY_INSIDE.write(event))
        .containsExactly(
            Map.entry("ce_specversion", "1.0"),
            Map.entry("ce_id", "e-1"),
            Map.entry("ce_source", "urn:test"),
            Map.entry("ce_type", "OrderCaptured"),
            Map.entry("ce_subject", "order-7"),
            Map.entry("ce_time", "2026-01-02T03:04:05.678901Z"),
            Map.entry("ce_datacontenttype", "application/json"),
            Map.entry("JMSXGroupID", "customer-1"),
            Map.entry("ce_tenant", "acme"),
            Map.entry("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
            Map.entry("ce_blank", ""));
    assertThat(KEY_OUTSIDE.write(event))
        .containsEntry("content-type", "application/json")
        .doesNotContainKeys("JMSXGroupID", "ce_partitionkey", "ce_datacontenttype");
  }

  @Test
  void readsBackWhatItWroteWithTheKeyInsideOrOutside() {
    Map<String, String> inside = KEY_INSIDE.write(event);
    assertThat(KEY_INSIDE.read(inside, null, event.payload(), inside)).isEqualTo(event);
    Map<String, String> outside = KEY_OUTSIDE.write(event);
    assertThat(KEY_OUTSIDE.read(outside, "customer-1", event.payload(), outside)).isEqualTo(event);
    assertThat(KEY_OUTSIDE.read(outside, null, event.payload(), outside).key()).isNull();
  }

  @Test
  void theBrokersOwnHeadersAndReservedNamesAreNotExtensions() {
    Map<String, String> h = new LinkedHashMap<>(KEY_INSIDE.write(event));
    h.put("JMSXDeliveryCount", "3");
    h.put("ce_partitionkey", "stray");
    h.put("ce_dataschema", "urn:x");
    assertThat(KEY_INSIDE.read(h, null, new byte[0], h).headers())
        .containsOnlyKeys("tenant", "traceparent", "blank");
  }

  @Test
  void anEventWithoutTheOptionalTimeIsReadWithTheTimeItWasRead() {
    Map<String, String> h = new LinkedHashMap<>(KEY_INSIDE.write(event));
    h.remove("ce_time");
    Instant before = Instant.now();
    Envelope read = KEY_INSIDE.read(h, null, event.payload(), h);
    assertThat(read.time()).isBetween(before, Instant.now());
    assertThat(read.id()).isEqualTo("e-1");
  }

  @Test
  void aMissingIdIsMalformedOfItsOwnKindWithTheRawBytes() {
    Map<String, String> h = new LinkedHashMap<>(KEY_INSIDE.write(event));
    h.remove("ce_id");
    byte[] raw = "raw".getBytes(StandardCharsets.UTF_8);
    assertThatThrownBy(() -> KEY_INSIDE.read(h, null, raw, Map.of("x", "y")))
        .isInstanceOfSatisfying(
            MalformedMessageException.class,
            e -> {
              assertThat(e.kind()).isEqualTo(MalformedMessageException.Kind.MISSING_ID);
              assertThat(e.reason()).contains("id must not be null");
              assertThat(e.rawPayload()).isEqualTo(raw);
              assertThat(e.rawHeaders()).containsEntry("x", "y");
            });
  }

  @Test
  void aBlankIdIsMissingToo() {
    Map<String, String> h = new LinkedHashMap<>(KEY_INSIDE.write(event));
    h.put("ce_id", " ");
    assertThatThrownBy(() -> KEY_INSIDE.read(h, null, new byte[0], h))
        .isInstanceOfSatisfying(
            MalformedMessageException.class,
            e -> {
              assertThat(e.kind()).isEqualTo(MalformedMessageException.Kind.MISSING_ID);
              assertThat(e.reason()).contains("id must not be blank");
            });
  }

  @Test
  void notACloudEventAnotherVersionOrABadValueIsMalformed() {
    assertThatThrownBy(() -> KEY_INSIDE.read(Map.of("foo", "bar"), null, new byte[0], Map.of()))
        .isInstanceOfSatisfying(
            MalformedMessageException.class,
            e -> {
              assertThat(e.kind()).isEqualTo(MalformedMessageException.Kind.MALFORMED);
              assertThat(e.reason()).isEqualTo("not a CloudEvent: no ce_specversion property");
            });
    Map<String, String> v2 = new LinkedHashMap<>(KEY_INSIDE.write(event));
    v2.put("ce_specversion", "2.0");
    assertThatThrownBy(() -> KEY_INSIDE.read(v2, null, new byte[0], v2))
        .hasMessageContaining("unsupported CloudEvents specversion '2.0'");
    Map<String, String> badTime = new LinkedHashMap<>(KEY_INSIDE.write(event));
    badTime.put("ce_time", "yesterday");
    assertThatThrownBy(() -> KEY_INSIDE.read(badTime, null, new byte[0], badTime))
        .isInstanceOfSatisfying(
            MalformedMessageException.class,
            e -> assertThat(e.kind()).isEqualTo(MalformedMessageException.Kind.MALFORMED));
    Map<String, String> noType = new LinkedHashMap<>(KEY_INSIDE.write(event));
    noType.remove("ce_type");
    assertThatThrownBy(() -> KEY_INSIDE.read(noType, null, new byte[0], noType))
        .isInstanceOf(MalformedMessageException.class)
        .hasMessageContaining("type");
    Map<String, String> badHeader = new LinkedHashMap<>(KEY_INSIDE.write(event));
    badHeader.put("ce_Upper", "x");
    assertThatThrownBy(() -> KEY_INSIDE.read(badHeader, null, new byte[0], badHeader))
        .isInstanceOf(MalformedMessageException.class);
  }
}
