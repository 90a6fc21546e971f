package dev.postbox.payments;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The crash harness, reduced for CI: 2,000 orders, 2 SIGKILLs of the server, a broker restart
 * (where the broker keeps messages across one) and a 10-second PostgreSQL outage, with 20% of the
 * events republished byte for byte and 3 poison messages. The full run is the same test with system
 * properties, e.g. {@code -Dtorture.orders=20000 -Dtorture.kills=5} (docs/reliability.md).
 */
abstract class TortureContract {

  abstract String broker();

  @Test
  void everyAcceptedOrderIsChargedAndNotifiedExactlyOnceThroughCrashes() throws Exception {
    TortureHarness.Settings settings =
        new TortureHarness.Settings(
            broker(),
            Integer.getInteger("torture.orders", 2_000),
            Integer.getInteger("torture.kills", 2),
            Integer.getInteger("torture.clients", 8),
            20,
            3,
            true,
            Duration.ofSeconds(Integer.getInteger("torture.db-pause-seconds", 10)),
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
  }
}
