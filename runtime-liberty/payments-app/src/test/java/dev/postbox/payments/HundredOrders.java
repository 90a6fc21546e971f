package dev.postbox.payments;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;

/** The check, on any broker: 100 orders, then exactly 100 charges and notifications. */
final class HundredOrders {

  private HundredOrders() {}

  static void placeAndAwait(PaymentsApi api) throws Exception {
    long orders0 = api.ledger("orders");
    long charges0 = api.ledger("charges");
    long charged0 = api.ledger("chargedTotalCents");
    long notifications0 = api.ledger("notifications");
    long doubles0 = api.ledger("doubleCharged");
    ExecutorService clients = Executors.newFixedThreadPool(4);
    List<Future<Long>> placed = new ArrayList<>();
    for (int i = 0; i < 100; i++) {
      int n = i;
      placed.add(
          clients.submit(
              () -> {
                long cents = 100 + ThreadLocalRandom.current().nextLong(10_000);
                HttpResponse<String> r =
                    api.post(
                        "/orders", "{\"customer\":\"it-" + n + "\",\"amountCents\":" + cents + "}");
                assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
                return cents;
              }));
    }
    long total = 0;
    for (Future<Long> f : placed) {
      total += f.get();
    }
    clients.shutdown();
    await()
        .atMost(Duration.ofSeconds(60))
        .until(
            () ->
                api.ledger("charges") - charges0 >= 100
                    && api.ledger("notifications") - notifications0 >= 100);
    await()
        .during(Duration.ofSeconds(2))
        .atMost(Duration.ofSeconds(10))
        .until(
            () ->
                api.ledger("charges") - charges0 == 100
                    && api.ledger("notifications") - notifications0 == 100);
    assertThat(api.ledger("orders") - orders0).isEqualTo(100);
    assertThat(api.ledger("chargedTotalCents") - charged0).isEqualTo(total);
    assertThat(api.ledger("doubleCharged")).as("orders charged twice").isEqualTo(doubles0);
  }
}
