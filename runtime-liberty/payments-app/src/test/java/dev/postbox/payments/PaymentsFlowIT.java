package dev.postbox.payments;

import static dev.postbox.payments.PaymentsApi.number;
import static dev.postbox.payments.PaymentsApi.text;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.spi.Envelope;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The payments app as the build deploys it (embedded H2, embedded Artemis) in a real Liberty
 * server: orders flow through the outbox, charges and notifications through the inbox.
 */
class PaymentsFlowIT {

  private final PaymentsApi api = new PaymentsApi();

  @Test
  void aHundredOrdersGiveExactlyAHundredChargesAndAHundredNotifications() throws Exception {
    HundredOrders.placeAndAwait(api);
  }

  @Test
  void aRetryWithTheSameIdempotencyKeyPlacesNoSecondOrder() {
    String key = "retry-" + System.nanoTime();
    String body = "{\"customer\":\"careful\",\"amountCents\":4200}";
    HttpResponse<String> first = api.post("/orders", body, "Idempotency-Key", key);
    HttpResponse<String> retry = api.post("/orders", body, "Idempotency-Key", key);
    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(retry.statusCode()).as("the first answer again").isEqualTo(201);
    assertThat(retry.headers().firstValue("Idempotency-Replayed")).contains("true");
    assertThat(retry.headers().firstValue("Location"))
        .isEqualTo(first.headers().firstValue("Location"));
    assertThat(text(retry.body(), "orderId")).isEqualTo(text(first.body(), "orderId"));
  }

  @Test
  void badOrdersAreRefusedWithAClearMessage() {
    HttpResponse<String> blank = api.post("/orders", "{\"customer\":\"\",\"amountCents\":5}");
    assertThat(blank.statusCode()).isEqualTo(400);
    assertThat(blank.body()).contains("customer is required");
    HttpResponse<String> negative = api.post("/orders", "{\"customer\":\"x\",\"amountCents\":-5}");
    assertThat(negative.statusCode()).isEqualTo(400);
    assertThat(negative.body()).contains("amountCents");
    HttpResponse<String> garbage = api.post("/orders", "not json");
    assertThat(garbage.statusCode()).isEqualTo(400);
    assertThat(api.get("/orders?limit=100000").statusCode()).isEqualTo(400);
  }

  @Test
  void republishedEventsAndAConflictingPayloadChargeNothingTwice() throws Exception {
    // Other tests' orders may still be being charged: start from a ledger that has stopped moving.
    AtomicLong seen = new AtomicLong(-1);
    await()
        .during(Duration.ofSeconds(2))
        .atMost(Duration.ofSeconds(60))
        .until(() -> seen.getAndSet(api.ledger("charges")) == seen.get());
    long charges0 = api.ledger("charges");
    Envelope order = DirectPublish.duplicatesAndAConflict("direct-" + System.nanoTime());
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> DirectPublish.conflictLetterFor(api, order.id()) != null);
    await()
        .during(Duration.ofSeconds(1))
        .atMost(Duration.ofSeconds(5))
        .until(() -> api.ledger("charges") - charges0 == 1);

    // Inspect and replay the conflict: refused without the operator's decision; forced, marked
    // REPLAYED, and still one charge.
    String letter = DirectPublish.conflictLetterFor(api, order.id());
    long id = number(letter, "id");
    HttpResponse<String> detail = api.get("/admin/dead-letters/" + id, "admin:admin");
    assertThat(detail.statusCode()).isEqualTo(200);
    assertThat(detail.body()).contains("\\\"amountCents\\\":1").contains("CONFLICT");
    HttpResponse<String> unforced =
        api.post("/admin/dead-letters/" + id + "/replay", null, "admin:admin");
    assertThat(unforced.statusCode()).isEqualTo(409);
    assertThat(unforced.body()).contains("CONFLICT");
    HttpResponse<String> replay =
        api.post("/admin/dead-letters/" + id + "/replay?force=true", null, "admin:admin");
    assertThat(replay.statusCode()).as(replay.body()).isEqualTo(200);
    assertThat(replay.body()).contains("\"handlerRan\":false").contains("conflicting");
    assertThat(
            api.post("/admin/dead-letters/" + id + "/replay?force=true", null, "admin:admin")
                .statusCode())
        .isEqualTo(409);
    assertThat(api.ledger("charges") - charges0).isEqualTo(1);
    String inbox = api.get("/admin/inbox", "admin:admin").body();
    assertThat(inbox).containsPattern("\"duplicates\":[1-9]");
  }
}
