package dev.postbox.payments;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** The harness's judgement must be able to fail: a loss, a double, a leftover each fail it. */
class TortureVerdictTest {

  private static final Map<String, Long> ACCEPTED = Map.of("a", 100L, "b", 250L);

  @Test
  void aCleanRunPasses() {
    TortureVerdict v =
        TortureVerdict.judge(
            ACCEPTED,
            Map.of("a", 1L, "b", 1L),
            Map.of("a", 1L, "b", 1L),
            350,
            0,
            Map.of("MALFORMED", 2L),
            2,
            40,
            37);
    assertThat(v.ok()).as(v.problems().toString()).isTrue();
  }

  @Test
  void aLostChargeFails() {
    TortureVerdict v =
        TortureVerdict.judge(ACCEPTED, Map.of("a", 1L), Map.of("a", 1L), 100, 0, Map.of(), 0, 0, 0);
    assertThat(v.ok()).isFalse();
    assertThat(v.lost()).isEqualTo(1);
  }

  @Test
  void aDoubleChargeFails() {
    TortureVerdict v =
        TortureVerdict.judge(
            ACCEPTED,
            Map.of("a", 2L, "b", 1L),
            Map.of("a", 1L, "b", 1L),
            450,
            0,
            Map.of(),
            0,
            0,
            0);
    assertThat(v.ok()).isFalse();
    assertThat(v.doubled()).isEqualTo(1);
    assertThat(v.problems()).anyMatch(p -> p.contains("ledger total 450"));
  }

  @Test
  void leftoversUnexpectedLettersMissingPoisonAndTooFewRejectionsFail() {
    TortureVerdict v =
        TortureVerdict.judge(
            ACCEPTED,
            Map.of("a", 1L, "b", 1L),
            Map.of("a", 1L, "b", 1L),
            350,
            3,
            Map.of("HANDLER_FAILED", 1L),
            2,
            5,
            9);
    assertThat(v.problems())
        .hasSize(4)
        .anyMatch(p -> p.contains("3 outbox rows"))
        .anyMatch(p -> p.contains("2 poison messages injected, 0"))
        .anyMatch(p -> p.contains("HANDLER_FAILED"))
        .anyMatch(p -> p.contains("rejected 5 duplicates; 9"));
  }
}
