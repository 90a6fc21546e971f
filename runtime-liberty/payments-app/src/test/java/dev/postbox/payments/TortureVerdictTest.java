package dev.postbox.payments;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.payments.TortureVerdict.Applied;
import java.util.List;
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
  void anOrderThatExpiredOnceInsteadOfBeingChargedPasses() {
    TortureVerdict v =
        TortureVerdict.judge(
            ACCEPTED, Map.of("a", 1L), Map.of("a", 1L), Map.of("b", 1L), 100, 0, Map.of(), 0, 0, 0);
    assertThat(v.ok()).as(v.problems().toString()).isTrue();
    assertThat(v.lost()).isZero();
  }

  @Test
  void anOrderChargedAndExpiredOrExpiredTwiceFails() {
    TortureVerdict both =
        TortureVerdict.judge(
            ACCEPTED,
            Map.of("a", 1L, "b", 1L),
            Map.of("a", 1L, "b", 1L),
            Map.of("b", 1L),
            350,
            0,
            Map.of(),
            0,
            0,
            0);
    assertThat(both.problems()).anySatisfy(p -> assertThat(p).contains("both charged"));
    TortureVerdict twice =
        TortureVerdict.judge(
            ACCEPTED, Map.of("a", 1L), Map.of("a", 1L), Map.of("b", 2L), 100, 0, Map.of(), 0, 0, 0);
    assertThat(twice.doubled()).isEqualTo(1);
    assertThat(twice.ok()).isFalse();
  }

  @Test
  void holdsLeftScheduledUncancelledBehindAChargePublishedAfterCancelOrEarlyFail() {
    TortureVerdict clean = new TortureVerdict(0, 0, List.of());
    List<java.time.Duration> late =
        List.of(java.time.Duration.ofMillis(30), java.time.Duration.ofMillis(80));
    assertThat(clean.holds(10, 2, 0, 0, 0, late).ok()).isTrue();
    assertThat(clean.holds(10, 2, 0, 0, 0, late).holds()).contains("p99 80 ms");
    assertThat(clean.holds(10, 2, 1, 0, 0, late).problems()).hasSize(1);
    assertThat(clean.holds(10, 2, 0, 1, 0, late).problems()).hasSize(1);
    assertThat(clean.holds(10, 2, 0, 0, 1, late).problems())
        .singleElement()
        .satisfies(p -> assertThat(p).contains("cancelled holds published"));
    assertThat(clean.holds(10, 2, 0, 0, 0, List.of(java.time.Duration.ofMillis(-5))).ok())
        .isFalse();
    // an expiry must not hide a lost OrderCaptured, nor a published hold its lost expiry
    TortureVerdict hidden = clean.holds(10, 2, 0, 0, 0, 1, 2, late);
    assertThat(hidden.lost()).isEqualTo(1);
    assertThat(hidden.ok()).isFalse();
    assertThat(clean.holds(10, 3, 0, 0, 0, 0, 2, late).ok()).isFalse();
  }

  @Test
  void aHoldsLatenessNetOfOutagesLeavesOutOnlyTheOverlappingSpansOnce() {
    java.time.Instant due = java.time.Instant.parse("2026-12-04T12:00:00Z");
    java.time.Instant published = due.plusSeconds(10);
    List<java.time.Instant[]> outages =
        List.of(
            new java.time.Instant[] {due.minusSeconds(5), due.plusSeconds(2)}, // 2 s inside
            new java.time.Instant[] {due.plusSeconds(4), due.plusSeconds(6)}, // 2 s
            new java.time.Instant[] {due.plusSeconds(5), due.plusSeconds(7)}, // overlaps: +1 s
            new java.time.Instant[] {due.plusSeconds(20), due.plusSeconds(30)}); // after it
    assertThat(TortureVerdict.netOf(due, published, outages))
        .isEqualTo(java.time.Duration.ofSeconds(5));
    assertThat(TortureVerdict.netOf(due, published, List.of()))
        .isEqualTo(java.time.Duration.ofSeconds(10));
    assertThat(TortureVerdict.netOf(due, due.minusMillis(5), outages))
        .as("early stays early")
        .isNegative();
    assertThat(TortureVerdict.spread(List.of(java.time.Duration.ofMillis(7))))
        .isEqualTo("p50 7 ms, p99 7 ms, max 7 ms");
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

  // ---- per-key order ----

  private static final Map<String, List<String>> PLACED =
      Map.of("ann", List.of("a1", "a2", "a3", "a4"), "bob", List.of("b1", "b2"));

  private static TortureVerdict clean() {
    return new TortureVerdict(0, 0, List.of());
  }

  private static List<Applied> applied(String... orders) {
    List<Applied> out = new java.util.ArrayList<>();
    for (int i = 0; i < orders.length; i++) {
      out.add(new Applied(orders[i], i + 1));
    }
    return out;
  }

  @Test
  void effectsInPlacedOrderPass() {
    TortureVerdict v =
        clean()
            .inOrder(
                "charges",
                PLACED,
                Map.of("ann", applied("a1", "a2", "a3", "a4"), "bob", applied("b1", "b2")),
                true);
    assertThat(v.ok()).as(v.problems().toString()).isTrue();
    assertThat(v.outOfOrder()).isZero();
  }

  @Test
  void aSwapFailsAndNamesTheKey() {
    TortureVerdict v =
        clean()
            .inOrder(
                "charges",
                PLACED,
                Map.of("ann", applied("a1", "a3", "a2", "a4"), "bob", applied("b1", "b2")),
                true);
    assertThat(v.ok()).isFalse();
    assertThat(v.outOfOrder()).isEqualTo(1);
    assertThat(v.problems()).singleElement().asString().contains("key ann: a3 (placed 3)");
  }

  @Test
  void aLateFirstEventCountsEveryEffectThatOvertookIt() {
    TortureVerdict v =
        clean().inOrder("charges", PLACED, Map.of("ann", applied("a2", "a3", "a4", "a1")), true);
    assertThat(v.outOfOrder()).isEqualTo(3);
  }

  @Test
  void aGapFailsEvenWhenTheMissingEventNeverCame() {
    TortureVerdict v =
        clean().inOrder("charges", PLACED, Map.of("ann", applied("a1", "a3", "a4")), true);
    assertThat(v.outOfOrder()).isEqualTo(2);
    assertThat(v.ok()).isFalse();
  }

  @Test
  void twoEffectsWithOneNumberWereAppliedSideBySide() {
    TortureVerdict v =
        clean()
            .inOrder(
                "notifications",
                PLACED,
                Map.of("bob", List.of(new Applied("b1", 1), new Applied("b2", 1))),
                true);
    assertThat(v.problems()).anyMatch(p -> p.contains("side by side"));
    assertThat(v.outOfOrder()).isEqualTo(1);
  }

  @Test
  void aDoubleIsNotAlsoADisorder() {
    TortureVerdict v =
        clean().inOrder("charges", PLACED, Map.of("bob", applied("b1", "b1", "b2")), true);
    assertThat(v.outOfOrder()).isZero();
    assertThat(v.ok()).isTrue(); // the double itself is judged by judge()
  }

  @Test
  void whereOrderIsNotPromisedDisorderIsNotedNotFailed() {
    TortureVerdict v =
        clean().inOrder("charges", PLACED, Map.of("ann", applied("a2", "a1", "a3", "a4")), false);
    assertThat(v.ok()).isTrue();
    assertThat(v.outOfOrder()).isEqualTo(1);
    assertThat(v.notes()).singleElement().asString().contains("applied before");
  }
}
