package dev.postbox.payments;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The harness must be able to fail. With the inbox's deduplication switched off on purpose ({@code
 * postbox.inbox.unsafe=skip-dedup}), the republished copies charge twice, and the harness must say
 * so.
 */
class NegativeControlIT {

  @Test
  void withDedupOffTheHarnessReportsDoubleCharges() throws Exception {
    TortureHarness.Result result =
        new TortureHarness(
                new TortureHarness.Settings(
                    "kafka", 300, 0, 4, 20, 0, false, Duration.ZERO, "skip-dedup"))
            .run();
    System.out.println("NEGATIVE CONTROL SUMMARY\n" + result.summary());
    assertThat(result.verdict().ok()).as(result.summary()).isFalse();
    assertThat(result.verdict().doubled()).isPositive();
  }
}
