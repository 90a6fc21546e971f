package dev.postbox.runtime.inbox;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Migrations;
import dev.postbox.runtime.db.Transactions;
import dev.postbox.runtime.retention.DatePartitions;
import dev.postbox.runtime.retention.Retention;
import dev.postbox.runtime.testing.ManualClock;
import dev.postbox.runtime.testing.TestDatabase;
import dev.postbox.spi.Envelope;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The date-partitioned inbox on the local PostgreSQL: dedup holds across buckets, the bucket never
 * moves under an open recording transaction, and a dropped bucket forgets only ids past the window,
 * as the deleting retention does.
 */
class DatePartitionedInboxIT {

  private static final String SUB = "payments";

  private TestDatabase db;
  private Transactions tx;
  private InboxRepository repo;
  private DatePartitions buckets;
  private final ManualClock clock =
      new ManualClock(Instant.now().truncatedTo(java.time.temporal.ChronoUnit.MILLIS));

  @BeforeEach
  void database() {
    db = TestDatabase.create(TestDatabase.Kind.POSTGRESQL);
    Dialect dialect = Migrations.migrate(db.dataSource());
    Migrations.partitionByDate(db.dataSource());
    tx = Transactions.jdbc(db.dataSource());
    clock.openDateBuckets(tx, dialect);
    repo = new InboxRepository(dialect);
    buckets = new DatePartitions(tx, clock, DatePartitions.Table.INBOX);
  }

  @AfterEach
  void drop() {
    db.close();
  }

  @Test
  void aCopyOfAnEventRecordedInAnEarlierBucketIsADuplicate() {
    assertThat(record("x")).containsExactly(true);
    clock.advance(Duration.ofDays(1));
    assertThat(buckets.maintain(Retention.DEFAULT_DEDUP_WINDOW).switched()).isTrue();

    // The copy of x goes to bucket 2, where the key (subscription, event_id, bucket) cannot see
    // bucket 1's row: only the look into earlier buckets stops it.
    assertThat(record("x", "y", "y")).containsExactly(false, true, false);
    boolean again = tx.inTransaction(c -> repo.record(c, SUB, event("x"), "f", clock.instant()));
    assertThat(again).isFalse();
    assertThat(db.count("SELECT COUNT(*) FROM postbox_inbox WHERE event_id = 'x'")).isEqualTo(1);
    assertThat(db.count("SELECT bucket FROM postbox_inbox WHERE event_id = 'y'")).isEqualTo(2);
  }

  @Test
  void theBucketDoesNotMoveWhileARecordingTransactionIsOpen() throws Exception {
    try (Connection open = db.dataSource().getConnection()) {
      open.setAutoCommit(false);
      assertThat(
              repo.recordAll(open, SUB, List.of(event("z")), List.of("f"), true, clock.instant()))
          .containsExactly(true);
      clock.advance(Duration.ofDays(1));
      // Were it to move now, a copy recorded in bucket 2 would not see z (not committed yet) in
      // bucket 1, and both would commit as new.
      DatePartitions.Run blocked = buckets.maintain(Retention.DEFAULT_DEDUP_WINDOW);
      assertThat(blocked.switched()).isFalse();
      assertThat(blocked.current()).isEqualTo(1);
      open.commit();
    }
    DatePartitions.Run moved = buckets.maintain(Retention.DEFAULT_DEDUP_WINDOW);
    assertThat(moved.switched()).isTrue();
    assertThat(moved.current()).isEqualTo(2);
    assertThat(record("z")).containsExactly(false);
  }

  @Test
  void droppingABucketForgetsOnlyIdsPastTheWindowAndKeepsThoseStillWaiting() {
    Duration window = Duration.ofDays(2);
    assertThat(record("old")).containsExactly(true);
    clock.advance(Duration.ofDays(1));
    buckets.maintain(window); // bucket 2
    assertThat(record("newer")).containsExactly(true);
    boolean[] waiting =
        tx.inTransaction(
            c ->
                repo.recordAll(
                    c, SUB, List.of(event("waiting")), List.of("f"), false, clock.instant()));
    assertThat(waiting).containsExactly(true); // RECEIVED: a deferred worker has yet to run it
    clock.advance(Duration.ofDays(2).minusHours(1));

    DatePartitions.Run run = buckets.maintain(window);
    assertThat(run.dropped()).contains(1).doesNotContain(2);
    assertThat(run.heldBack()).isEmpty(); // bucket 2's rows are a day inside the window
    assertThat(record("old", "newer")).containsExactly(true, false);

    clock.advance(Duration.ofDays(2));
    DatePartitions.Run later = buckets.maintain(window);
    assertThat(later.heldBack()).contains(2); // "waiting" is still RECEIVED
    assertThat(record("newer")).containsExactly(false);
  }

  private List<Boolean> record(String... ids) {
    List<Envelope> events =
        java.util.Arrays.stream(ids).map(DatePartitionedInboxIT::event).toList();
    boolean[] fresh =
        tx.inTransaction(
            c ->
                repo.recordAll(
                    c, SUB, events, Collections.nCopies(ids.length, "f"), true, clock.instant()));
    List<Boolean> out = new java.util.ArrayList<>();
    for (boolean b : fresh) {
      out.add(b);
    }
    return out;
  }

  private static Envelope event(String id) {
    return Envelope.builder().id(id).source("urn:t").type("T").payload("{}").build();
  }
}
