package dev.postbox.payments;

import dev.postbox.spi.Broker;
import dev.postbox.spi.Brokers;
import dev.postbox.spi.Envelope;
import java.util.List;
import java.util.Map;

/**
 * Publishes straight to the build's embedded Artemis broker over TCP, past the app and without
 * Artemis's own duplicate detection: every copy reaches the inbox, which alone must reject it.
 */
final class DirectPublish {

  private DirectPublish() {}

  /**
   * An OrderCaptured event delivered three times, then once more with a tampered payload: one
   * charge, duplicates, and a CONFLICT dead letter.
   *
   * @return the event
   */
  static Envelope duplicatesAndAConflict(String orderId) {
    Envelope order =
        Envelope.builder()
            .source("urn:postbox:payments-it")
            .type("OrderCaptured")
            .key(orderId)
            .payload(
                "{\"orderId\":\"" + orderId + "\",\"customer\":\"direct\",\"amountCents\":700}")
            .build();
    publish(
        order,
        order,
        order,
        order.toBuilder()
            .payload("{\"orderId\":\"" + orderId + "\",\"customer\":\"direct\",\"amountCents\":1}")
            .build());
    return order;
  }

  /** Publishes events to the orders destination as they are, past the app. */
  static void publish(Envelope... events) {
    try (Broker broker =
        Brokers.open(
            "artemis",
            Map.of(
                "url",
                System.getProperty("payments.artemis.url"),
                "user",
                System.getProperty("payments.artemis.user"),
                "password",
                System.getProperty("payments.artemis.password"),
                "duplicate.detection",
                "false"))) {
      broker.publisher().publishAll("orders", List.of(events));
    }
  }

  /** An OrderCaptured event whose payload the payments handler cannot decode (MALFORMED). */
  static Envelope undecodableOrder(String orderId) {
    return Envelope.builder()
        .source("urn:postbox:payments-it")
        .type("OrderCaptured")
        .key(orderId)
        .payload("{\"orderId\":\"" + orderId + "\",\"amountCents\":\"lots\"}")
        .build();
  }

  /** An event of a type no handler of orders/payments takes (UNKNOWN_TYPE). */
  static Envelope unheardOf(String key) {
    return Envelope.builder()
        .source("urn:postbox:payments-it")
        .type("OrderUnheardOf")
        .key(key)
        .payload("{}")
        .build();
  }

  /** The open CONFLICT dead letter of an event, as listed by the admin API, or null. */
  static String conflictLetterFor(PaymentsApi api, String eventId) {
    String letters = api.get("/admin/dead-letters?limit=500", "admin:admin").body();
    for (String letter : letters.split("\\},\\{")) {
      if (letter.contains(eventId) && letter.contains("\"reason\":\"CONFLICT\"")) {
        return letter;
      }
    }
    return null;
  }
}
