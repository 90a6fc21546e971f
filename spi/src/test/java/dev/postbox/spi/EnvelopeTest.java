package dev.postbox.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class EnvelopeTest {

  private Envelope.Builder valid() {
    return Envelope.builder().source("urn:test").type("T");
  }

  @Test
  void builderDefaultsIdAndTime() {
    Instant before = Instant.now();
    Envelope e = valid().build();
    assertThat(e.id()).hasSize(36);
    assertThat(e.time()).isAfterOrEqualTo(before);
    assertThat(e.headers()).isEmpty();
    assertThat(e.payload()).isEmpty();
  }

  @Test
  void blankIdIsRejectedWithItsName() {
    assertThatThrownBy(() -> valid().id(" ").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("envelope id must not be blank");
  }

  @Test
  void missingSourceOrTypeIsRejected() {
    assertThatThrownBy(() -> Envelope.builder().type("T").build())
        .hasMessage("envelope source must not be null");
    assertThatThrownBy(() -> Envelope.builder().source("s").build())
        .hasMessage("envelope type must not be null");
  }

  @Test
  void blankOptionalAttributeIsRejectedNotIgnored() {
    assertThatThrownBy(() -> valid().key("").build())
        .hasMessageContaining("envelope key must not be blank (use null for none)");
  }

  @Test
  void overlongIdIsRejected() {
    assertThatThrownBy(() -> valid().id("x".repeat(Envelope.MAX_ID_LENGTH + 1)).build())
        .hasMessageContaining("the limit is 256");
  }

  @Test
  void tooManyHeadersAreRejected() {
    Map<String, String> headers = new HashMap<>();
    for (int i = 0; i <= Envelope.MAX_HEADERS; i++) {
      headers.put("h" + i, "v");
    }
    assertThatThrownBy(() -> valid().headers(headers).build())
        .hasMessageContaining("33 headers, the limit is 32");
  }

  @Test
  void oversizedHeaderSetIsRejected() {
    assertThatThrownBy(() -> valid().header("big", "x".repeat(Envelope.MAX_HEADER_BYTES)).build())
        .hasMessageContaining("the limit is 8192");
  }

  @Test
  void headerNamesFollowTheCloudEventsRule() {
    assertThatThrownBy(() -> valid().header("X-Trace", "1").build())
        .hasMessageContaining("'X-Trace' is invalid");
    assertThatThrownBy(() -> valid().header("type", "1").build())
        .hasMessageContaining("is a CloudEvents attribute");
  }

  @Test
  void malformedTraceparentIsRejected() {
    assertThatThrownBy(() -> valid().header("traceparent", "nonsense").build())
        .hasMessageContaining("not W3C trace context format");
    String ok = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    assertThat(valid().header("traceparent", ok).build().header("traceparent")).isEqualTo(ok);
  }

  @Test
  void payloadIsCopiedInAndOut() {
    byte[] bytes = {1, 2, 3};
    Envelope e = valid().payload(bytes).build();
    bytes[0] = 9;
    e.payload()[1] = 9;
    assertThat(e.payload()).containsExactly(1, 2, 3);
  }

  @Test
  void headersAreUnmodifiable() {
    Envelope e = valid().header("a", "1").build();
    assertThatThrownBy(() -> e.headers().put("b", "2"))
        .isInstanceOf(UnsupportedOperationException.class);
  }

  @Test
  void equalityComparesPayloadBytes() {
    Envelope a = valid().id("1").time(Instant.EPOCH).payload(new byte[] {1}).build();
    Envelope b = valid().id("1").time(Instant.EPOCH).payload(new byte[] {1}).build();
    Envelope c = valid().id("1").time(Instant.EPOCH).payload(new byte[] {2}).build();
    assertThat(a).isEqualTo(b).hasSameHashCodeAs(b).isNotEqualTo(c);
    assertThat(a.toBuilder().build()).isEqualTo(a);
  }

  @Test
  void toStringNeverShowsThePayload() {
    Envelope e = valid().payload("card 4111-1111").build();
    assertThat(e.toString()).doesNotContain("4111").contains("payloadBytes=14");
  }
}
