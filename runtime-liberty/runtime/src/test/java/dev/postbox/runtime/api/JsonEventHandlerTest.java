package dev.postbox.runtime.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.spi.Envelope;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class JsonEventHandlerTest {

  public static class Order {
    public String orderId;
    public long amountCents;
  }

  static class ChargeOrder extends JsonEventHandler<Order> {
    final List<Order> seen = new ArrayList<>();

    @Override
    protected void handle(Order payload, Envelope event) {
      seen.add(payload);
    }
  }

  /** What a CDI proxy looks like: a subclass of the bean class. */
  static class ChargeOrderProxy extends ChargeOrder {}

  @SuppressWarnings("rawtypes")
  static class Raw extends JsonEventHandler {
    @Override
    protected void handle(Object payload, Envelope event) {}
  }

  private static Envelope event(String json) {
    return Envelope.builder().source("urn:test").type("OrderCaptured").payload(json).build();
  }

  @Test
  void aJsonPayloadIsDecodedIntoTheDeclaredType() throws Exception {
    ChargeOrder handler = new ChargeOrderProxy();
    handler.handle(event("{\"orderId\":\"o-1\",\"amountCents\":1250}"));
    assertThat(handler.seen)
        .singleElement()
        .satisfies(
            o -> {
              assertThat(o.orderId).isEqualTo("o-1");
              assertThat(o.amountCents).isEqualTo(1250);
            });
  }

  @Test
  void aPayloadThatDoesNotDecodeIsUnprocessableAsMalformed() {
    ChargeOrder handler = new ChargeOrder();
    assertThatThrownBy(() -> handler.handle(event("{\"amountCents\": \"lots\"")))
        .isInstanceOfSatisfying(
            UnprocessableEventException.class,
            e -> assertThat(e.reason()).isEqualTo(DeadLetterReason.MALFORMED))
        .hasMessageContaining("does not decode as");
    assertThatThrownBy(() -> handler.handle(event("null")))
        .isInstanceOf(UnprocessableEventException.class);
    assertThat(handler.seen).isEmpty();
  }

  @Test
  void aHandlerWithoutAConcreteTypeIsRefusedWithAClearMessage() {
    assertThatThrownBy(() -> JsonEventHandler.resolvePayloadType(Raw.class))
        .hasMessageContaining("concrete payload type");
  }
}
