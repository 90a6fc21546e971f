package dev.postbox.runtime.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.runtime.api.OutboxRow;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class DueOrderTest {

  private static final Instant T = Instant.parse("2026-12-04T12:00:00Z");

  /** A plain row recorded at {@code T + recorded} s. */
  private static OutboxRow plain(long id, String key, int recorded) {
    return row(id, key, T.plusSeconds(recorded), null);
  }

  /** A default scheduled row, fell due at {@code T + due} s (the claim set created_at to it). */
  private static OutboxRow scheduled(long id, String key, int due) {
    return row(id, key, T.plusSeconds(due), T.plusSeconds(due));
  }

  private static OutboxRow row(long id, String key, Instant createdAt, Instant dueAt) {
    return new OutboxRow(
        id,
        0,
        "e" + id,
        "d",
        key,
        "t",
        "s",
        null,
        null,
        Map.of(),
        new byte[0],
        T,
        createdAt,
        0,
        dueAt);
  }

  private static List<Long> ids(List<OutboxRow> rows) {
    List<Long> out = new ArrayList<>();
    rows.forEach(r -> out.add(r.id()));
    return out;
  }

  @Test
  void aScheduledRowGoesAmongItsKeysRowsByItsDueTimeAndEveryOtherRowKeepsItsPlace() {
    List<OutboxRow> claimed =
        List.of(
            scheduled(1, "k", 10), // recorded first (at 0), due at 10
            plain(2, "other", 1),
            plain(3, "k", 5), // recorded at 5: due before the scheduled one
            plain(4, "k", 12), // recorded at 12: after it
            scheduled(5, "k", 14), // recorded at 13, due at 14
            plain(6, null, 14));
    assertThat(ids(DueOrder.arrange(claimed)))
        // k's slots (1, 3, 4, 5) hold k's rows in due order: 3 (5 s), 1 (10 s), 4 (12 s), 5 (14 s)
        .containsExactly(3L, 2L, 1L, 4L, 5L, 6L);
  }

  @Test
  void aScheduledRowNeverOvertakesAnEarlierInKeyOrderRowOfItsKey() {
    // an inKeyOrder row (no dueAt of its own) recorded first, due at 60 (its created_at since it
    // fell due); a default scheduled row recorded after it, due at 10: it waited behind it
    OutboxRow inKeyOrder = row(1, "k", T.plusSeconds(60), null);
    assertThat(ids(DueOrder.arrange(List.of(inKeyOrder, scheduled(2, "k", 10)))))
        .containsExactly(1L, 2L);
  }

  @Test
  void equalTimesGoInIdOrderAndPlainRowsNeverOvertakeEachOther() {
    List<OutboxRow> claimed =
        List.of(
            scheduled(1, "k", 5),
            plain(2, "k", 5), // same time: id order
            plain(3, "k", 9),
            plain(4, "k", 8)); // a clock that stepped back: still after 3 (id order for plain)
    assertThat(ids(DueOrder.arrange(claimed))).containsExactly(1L, 2L, 3L, 4L);
  }

  @Test
  void withoutScheduledRowsTheClaimIsUnchanged() {
    List<OutboxRow> claimed = List.of(plain(1, "k", 9), plain(2, "k", 3));
    assertThat(DueOrder.arrange(claimed)).isSameAs(claimed);
  }

  @Test
  void aFullClaimHoldsBackAScheduledRowDueAfterTheFirstUnreadRowWasRecordedWithItsKeysLaterRows() {
    List<OutboxRow> arranged =
        DueOrder.arrange(
            List.of(plain(1, "k", 1), scheduled(2, "k", 10), plain(3, "k", 11), plain(4, "x", 2)));
    assertThat(ids(arranged)).containsExactly(1L, 2L, 3L, 4L);
    // the first unread row was recorded at 5 s: a row of k after it may have come due before 10 s
    assertThat(ids(DueOrder.withoutOvertaken(arranged, T.plusSeconds(5), false)))
        .containsExactly(1L, 4L);
    assertThat(ids(DueOrder.withoutOvertaken(arranged, T.plusSeconds(10), false)))
        .as("recorded when it fell due: after it")
        .containsExactly(1L, 2L, 3L, 4L);
    assertThat(DueOrder.withoutOvertaken(arranged, null, false))
        .as("nothing unread")
        .isSameAs(arranged);
  }

  @Test
  void aClaimOfOnlyScheduledRowsIsEmptiedOnlyWhenALaterTurnReadsFurther() {
    List<OutboxRow> arranged = List.of(scheduled(1, "k", 5), scheduled(2, "j", 3));
    assertThat(ids(DueOrder.withoutOvertaken(arranged, T.plusSeconds(4), true)))
        .containsExactly(2L);
    assertThat(DueOrder.withoutOvertaken(arranged, T, true)).isEmpty();
    assertThat(DueOrder.withoutOvertaken(arranged, T, false))
        .as("a whole batch: it goes, so the partition makes progress")
        .isSameAs(arranged);
    List<OutboxRow> keyless = List.of(row(1, null, T, T.plusSeconds(9)), plain(2, "k", 1));
    assertThat(ids(DueOrder.withoutOvertaken(keyless, T, true))).containsExactly(1L, 2L);
  }
}
