package dev.postbox.payments;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The crash harness on Kafka, reduced for CI: 2,000 orders, 2 SIGKILLs, a broker restart and a
 * 10-second PostgreSQL outage. The full run is the same test with system properties, e.g. {@code
 * -Dtorture.orders=20000 -Dtorture.kills=5} (see docs/reliability.md).
 */
class KafkaTortureIT {

  @Test
  void everyAcceptedOrderIsChargedAndNotifiedExactlyOnceThroughCrashes() throws Exception {
    TortureHarness.Settings settings =
        new TortureHarness.Settings(
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
        Path.of(System.getProperty("java.io.tmpdir"), "torture-kafka.txt"), summary + "\n");
    assertThat(result.verdict().problems()).as(summary).isEmpty();
    assertThat(result.accepted()).isEqualTo(settings.orders());
    assertThat(result.republished()).as("the harness republished something").isPositive();
  }
}
