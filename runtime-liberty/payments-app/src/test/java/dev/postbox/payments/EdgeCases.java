package dev.postbox.payments;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;

/**
 * The inputs a new user found accepted but not carried, each answered 400 with a JSON message
 * naming the field: never 201 and stuck, never 500. Run on the embedded default (EdgeCasesIT) and
 * on PostgreSQL (PaymentsOnPostgresIT), where a NUL once answered 500.
 */
final class EdgeCases {

  private EdgeCases() {}

  static void check(PaymentsApi api) {
    long orders = api.ledger("orders");
    long charges = api.ledger("charges");
    long notifications = api.ledger("notifications");
    badRequest(
        api.post("/orders", "{\"customer\":\"a\\u0000b\",\"amountCents\":5}"),
        "customer contains the control character U+0000 at index 1");
    badRequest(
        api.post("/orders", "{\"customer\":\"a\\ud800b\",\"amountCents\":5}"),
        "customer contains an unpaired surrogate U+D800 at index 1");
    badRequest(
        api.post("/orders", "{\"customer\":\"ada\",\"amountCents\":1.5}"),
        "amountCents must be a whole number of cents");
    badRequest(
        api.post("/orders", "{\"customer\":\"ada\",\"customer\":\"bob\",\"amountCents\":5}"),
        "the key \\\"customer\\\" appears twice in one object");
    // numbers no BigDecimal or JSON-P parser converts: 400, not 500
    badRequest(
        api.post("/orders", "{\"customer\":\"ada\",\"amountCents\":1e2147483648}"),
        "amountCents must be a whole number between 1 and");
    badRequest(
        api.post("/orders", "{\"customer\":\"ada\",\"amountCents\":" + "9".repeat(2_000) + "}"),
        "amountCents must be a whole number between 1 and");
    badRequest(api.get("/orders?limit=abc"), "limit must be between 1 and 500, not 'abc'");
    badRequest(api.get("/notifications?limit=abc"), "limit must be between 1 and 500");
    badRequest(
        api.get("/admin/dead-letters?limit=abc", "admin:admin"),
        "limit must be between 1 and 500, not 'abc'");
    badRequest(
        api.post("/admin/outbox/failed/retry?all=maybe", null, "admin:admin"),
        "all must be true or false");
    assertThat(api.ledger("orders")).as("no order placed by any of these").isEqualTo(orders);

    // What is valid still goes: whole cents written as 150.0, and text beyond ASCII.
    HttpResponse<String> fine =
        api.post("/orders", "{\"customer\":\"Zoë \\ud83d\\ude00\",\"amountCents\":150.0}");
    assertThat(fine.statusCode()).as(fine.body()).isEqualTo(201);
    assertThat(fine.body()).contains("\"amountCents\":150").contains("Zoë \ud83d\ude00");
    // a member it ignores may hold any valid JSON, a number of 2,000 digits too
    HttpResponse<String> ignored =
        api.post(
            "/orders",
            "{\"customer\":\"ada\",\"x\":[" + "9".repeat(2_000) + "],\"amountCents\":5}");
    assertThat(ignored.statusCode()).as(ignored.body()).isEqualTo(201);
    // the two accepted orders are charged and notified (and drained before the next test counts)
    org.awaitility.Awaitility.await()
        .atMost(java.time.Duration.ofSeconds(60))
        .until(
            () ->
                api.ledger("charges") - charges == 2
                    && api.ledger("notifications") - notifications == 2);
  }

  private static void badRequest(HttpResponse<String> r, String message) {
    assertThat(r.statusCode()).as(r.body()).isEqualTo(400);
    assertThat(r.headers().firstValue("Content-Type"))
        .hasValueSatisfying(t -> assertThat(t).startsWith("application/json"));
    assertThat(r.body()).startsWith("{\"error\":\"").contains(message);
  }
}
