package dev.postbox.payments;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.payments.orders.OrderResource;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The crash harness, reduced for CI: 2,000 orders, 2 SIGKILLs of the server each aimed at its own
 * window, a broker restart, a 10-second PostgreSQL outage and 3 transient failures inside inbox
 * transactions, with 20% of the events republished byte for byte and 3 poison messages. The full
 * run is the same test with system properties, e.g. {@code -Dtorture.orders=20000
 * -Dtorture.kills=5} (docs/reliability.md).
 */
abstract class TortureContract {

  abstract String broker();

  /**
   * Where in {@link TortureHarness#KILL_PHASES} this broker's kills start, so that the reduced runs
   * (two kills each) aim at every window between them.
   */
  abstract int firstKillPhase();

  @Test
  void everyAcceptedOrderIsChargedAndNotifiedExactlyOnceThroughCrashes() throws Exception {
    TortureHarness.Settings settings =
        new TortureHarness.Settings(
            broker(),
            Integer.getInteger("torture.orders", 2_000),
            Integer.getInteger("torture.kills", 2),
            firstKillPhase(),
            Integer.getInteger("torture.clients", 8),
            20,
            3,
            true,
            Duration.ofSeconds(Integer.getInteger("torture.db-pause-seconds", 10)),
            3,
            "none");
    TortureHarness.Result result = new TortureHarness(settings).run();
    String summary = result.summary();
    System.out.println("TORTURE SUMMARY\n" + summary);
    Files.writeString(
        Path.of(System.getProperty("java.io.tmpdir"), "torture-" + broker() + ".txt"),
        summary + "\n");
    assertThat(result.verdict().problems()).as(summary).isEmpty();
    assertThat(result.accepted()).isEqualTo(settings.orders());
    assertThat(result.republished()).as("the harness republished something").isPositive();
    assertThat(result.killsLanded())
        .as("every kill held a server thread in its window first")
        .hasSize(settings.kills());
    if (result.killsLanded().contains(OrderResource.ORDER_COMMITTED_NOT_ANSWERED)) {
      assertThat(result.answeredFromIdempotencyKey())
          .as("the client whose POST was committed but never answered got its order back")
          .isPositive();
    }
  }
}
