package dev.postbox.payments;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The harness must be able to fail, both ways. Each switch breaks the promise on purpose and the
 * harness must say so: with deduplication off ({@code postbox.inbox.unsafe=skip-dedup}) the
 * republished copies charge twice; with the ack sent before the commit ({@code ack-before-commit})
 * a transaction that fails after the ack loses its event.
 */
class NegativeControlIT {

  @Test
  void withDedupOffTheHarnessReportsDoubleCharges() throws Exception {
    TortureHarness.Result result =
        new TortureHarness(
                new TortureHarness.Settings(
                    "kafka", 300, 0, 0, 4, 20, 0, false, Duration.ZERO, 0, "skip-dedup"))
            .run();
    System.out.println("NEGATIVE CONTROL (doubles) SUMMARY\n" + result.summary());
    assertThat(result.verdict().ok()).as(result.summary()).isFalse();
    assertThat(result.verdict().doubled()).as(result.summary()).isPositive();
  }

  @Test
  void withTheAckBeforeTheCommitTheHarnessReportsLostOrders() throws Exception {
    // The same three transient failures the torture runs survive.
    TortureHarness.Result result =
        new TortureHarness(
                new TortureHarness.Settings(
                    "kafka", 300, 0, 0, 4, 0, 0, false, Duration.ZERO, 3, "ack-before-commit"))
            .run();
    System.out.println("NEGATIVE CONTROL (losses) SUMMARY\n" + result.summary());
    assertThat(result.verdict().ok()).as(result.summary()).isFalse();
    assertThat(result.verdict().lost()).as(result.summary()).isPositive();
  }
}
