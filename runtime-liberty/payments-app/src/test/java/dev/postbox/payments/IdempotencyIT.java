package dev.postbox.payments;

import static dev.postbox.payments.PaymentsApi.text;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** The API edge's Idempotency-Key and trace headers, against the running app. */
class IdempotencyIT {

  private final PaymentsApi api = new PaymentsApi();

  @Test
  void theSameKeyWithAnotherBodyIs422AndPlacesNothing() {
    String key = "mismatch-" + System.nanoTime();
    HttpResponse<String> first =
        api.post("/orders", "{\"customer\":\"m\",\"amountCents\":100}", "Idempotency-Key", key);
    HttpResponse<String> other =
        api.post("/orders", "{\"customer\":\"m\",\"amountCents\":999}", "Idempotency-Key", key);
    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(other.statusCode()).as(other.body()).isEqualTo(422);
    assertThat(other.body()).contains("different request");
    assertThat(other.headers().firstValue("Content-Type").orElse("")).contains("json");
  }

  @Test
  void eightConcurrentRequestsWithOneNewKeyPlaceExactlyOneOrderAndNeverA500() throws Exception {
    String key = "race-" + System.nanoTime();
    String customer = "race-" + System.nanoTime();
    String body = "{\"customer\":\"" + customer + "\",\"amountCents\":777}";
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try {
      CountDownLatch go = new CountDownLatch(1);
      List<Future<HttpResponse<String>>> answers = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        answers.add(
            pool.submit(
                () -> {
                  go.await();
                  return api.post("/orders", body, "Idempotency-Key", key);
                }));
      }
      go.countDown();
      List<String> orderIds = new ArrayList<>();
      for (Future<HttpResponse<String>> f : answers) {
        HttpResponse<String> r = f.get();
        assertThat(r.statusCode()).as(r.body()).isIn(201, 409);
        assertThat(r.body()).doesNotContain("Exception").doesNotContain("at dev.");
        if (r.statusCode() == 201) {
          orderIds.add(text(r.body(), "orderId"));
        }
      }
      assertThat(orderIds).isNotEmpty();
      assertThat(orderIds).as("every 201 is the one order").containsOnly(orderIds.get(0));
      // a retry once the winner has answered gets the same order
      HttpResponse<String> later = api.post("/orders", body, "Idempotency-Key", key);
      assertThat(later.statusCode()).isEqualTo(201);
      assertThat(text(later.body(), "orderId")).isEqualTo(orderIds.get(0));
      long placed =
          java.util.regex.Pattern.compile("\"customer\":\"" + customer + "\"")
              .matcher(api.get("/orders?limit=500").body())
              .results()
              .count();
      assertThat(placed).as("orders placed for the key").isEqualTo(1);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void aBadKeyIs400() {
    HttpResponse<String> r =
        api.post(
            "/orders",
            "{\"customer\":\"k\",\"amountCents\":1}",
            "Idempotency-Key",
            "x".repeat(201));
    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(r.body()).contains("Idempotency-Key");
  }

  @Test
  void anOversizedTracestateIsDroppedAndTheOrderIsStillCharged() {
    // Once: 201, then the relay parked the event ("headers take 9078 bytes") and it was never
    // charged.
    HttpResponse<String> r =
        api.post(
            "/orders",
            "{\"customer\":\"traced\",\"amountCents\":321}",
            "traceparent",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "tracestate",
            "k=" + "v".repeat(9_000));
    assertThat(r.statusCode()).isEqualTo(201);
    String orderId = text(r.body(), "orderId");
    await()
        .atMost(Duration.ofMinutes(1))
        .until(() -> api.get("/notifications?limit=200").body().contains(orderId));
  }

  @Test
  void anOversizedBodyIs413AndPlacesNothing() {
    String huge = "{\"customer\":\"" + "x".repeat(100_000) + "\",\"amountCents\":1}";
    HttpResponse<String> r =
        api.post("/orders", huge, "Idempotency-Key", "huge-" + System.nanoTime());
    assertThat(r.statusCode()).isEqualTo(413);
    assertThat(r.body()).contains("larger than");
  }
}
