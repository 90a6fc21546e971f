package dev.postbox.runtime.api;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.spi.Envelope;
import org.junit.jupiter.api.Test;

/** An event is checked as its envelope will be, when it is recorded, not when it is published. */
class OutboxEventTest {

  private static OutboxEvent.Builder event() {
    return OutboxEvent.builder().destination("orders").type("T").source("urn:s").json("{}");
  }

  @Test
  void headersTheEnvelopeWouldRefuseFailAtRecordTime() {
    assertThatThrownBy(() -> event().header("tracestate", "k=" + "v".repeat(9_000)).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("cannot be published")
        .hasMessageContaining("8192");
  }

  @Test
  void aMalformedTraceparentFailsAtRecordTime() {
    assertThatThrownBy(() -> event().header(Envelope.TRACEPARENT, "nonsense").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("traceparent");
  }

  @Test
  void anOverlongKeyFailsAtRecordTime() {
    assertThatThrownBy(() -> event().key("k".repeat(Envelope.MAX_ATTRIBUTE_LENGTH + 1)).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("cannot be published");
  }

  @Test
  void anOrdinaryEventIsFine() {
    assertThatCode(() -> event().key("order-1").header("x", "y").build())
        .doesNotThrowAnyException();
  }
}
