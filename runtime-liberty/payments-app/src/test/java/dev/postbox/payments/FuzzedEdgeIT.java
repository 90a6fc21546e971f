package dev.postbox.payments;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The fuzzed edge against the server the build starts: the embedded default (H2 and Artemis inside
 * the server), as {@code scripts/payments.sh} runs it. PaymentsOnPostgresIT runs the same on
 * PostgreSQL.
 */
class FuzzedEdgeIT {

  @Test
  void hostileRequestsGetNoServerErrorAndEveryAcceptedOrderIsChargedAndNotifiedOnce()
      throws Exception {
    FuzzedEdge.Report report =
        new FuzzedEdge(PaymentsApi.defaultUrl())
            .run(Long.getLong("fuzz.seed", System.nanoTime()), Duration.ofSeconds(30));
    assertThat(report.accepted()).as("some orders were accepted").isGreaterThan(20);
    assertThat(report.byStatus()).containsKeys(400, 201);
  }
}
