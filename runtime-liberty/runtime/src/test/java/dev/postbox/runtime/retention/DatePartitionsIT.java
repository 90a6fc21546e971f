package dev.postbox.runtime.retention;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.runtime.api.OutboxEvent;
import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Migrations;
import dev.postbox.runtime.db.Transactions;
import dev.postbox.runtime.outbox.OutboxRepository;
import dev.postbox.runtime.testing.ManualClock;
import dev.postbox.runtime.testing.TestDatabase;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Date-partitioned retention of the outbox on the local PostgreSQL: the conversion keeps every row,
 * buckets move with the clock, and a bucket is dropped only once all its rows are settled and past
 * the retention. (The inbox's dedup across buckets: {@code inbox.DatePartitionedInboxIT}.)
 */
class DatePartitionsIT {

  private TestDatabase db;
  private Dialect dialect;
  private Transactions tx;
  private OutboxRepository rows;
  private final ManualClock clock =
      new ManualClock(Instant.now().truncatedTo(java.time.temporal.ChronoUnit.MILLIS));

  @BeforeEach
  void database() {
    db = TestDatabase.create(TestDatabase.Kind.POSTGRESQL);
    dialect = Migrations.migrate(db.dataSource());
    tx = Transactions.jdbc(db.dataSource());
    rows = new OutboxRepository(dialect, 4);
  }

  @AfterEach
  void drop() {
    db.close();
  }

  @Test
  void theConversionKeepsEveryRowAndTheIdsGoOn() {
    record("before");
    db.execute(
        "INSERT INTO postbox_inbox (subscription, event_id, fingerprint, status, received_at)"
            + " VALUES ('s', 'seen-before', 'f', 'PROCESSED', now())");
    assertThat(partitioned(DatePartitions.Table.OUTBOX)).isFalse();

    convert();
    Migrations.partitionByDate(db.dataSource()); // applied once: the second call has nothing to do

    assertThat(partitioned(DatePartitions.Table.OUTBOX)).isTrue();
    assertThat(partitioned(DatePartitions.Table.INBOX)).isTrue();
    record("after");
    assertThat(outbox()).containsExactly("before@0", "after@1");
    assertThat(db.count("SELECT COUNT(*) FROM postbox_outbox WHERE id > 1")).isEqualTo(1);
    assertThat(
            db.count(
                "SELECT COUNT(*) FROM postbox_inbox WHERE event_id = 'seen-before' AND bucket = 0"))
        .isEqualTo(1);
  }

  @Test
  void otherDatabasesRefuseTheOptionByName() {
    try (TestDatabase h2 = TestDatabase.create(TestDatabase.Kind.H2)) {
      Migrations.migrate(h2.dataSource());
      assertThatThrownBy(() -> Migrations.partitionByDate(h2.dataSource()))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("postbox.date-partitions=true needs PostgreSQL");
    }
  }

  @Test
  void aBucketIsDroppedOnlyOnceEveryRowInItIsSettledAndPastTheRetention() {
    convert();
    DatePartitions parts = new DatePartitions(tx, clock, DatePartitions.Table.OUTBOX);
    Duration keep = Duration.ofDays(2);

    DatePartitions.Run first = parts.maintain(keep);
    assertThat(first.current()).isEqualTo(1);
    assertThat(first.created()).containsExactly(3); // buckets 1 and 2 came with the conversion
    assertThat(first.dropped()).containsExactly(0); // the old table, empty
    assertThat(first.switched()).isFalse();

    record("a"); // bucket 1, pending
    clock.advance(Duration.ofDays(1));
    DatePartitions.Run second = parts.maintain(keep);
    assertThat(second.switched()).isTrue();
    assertThat(second.current()).isEqualTo(2);
    assertThat(second.created()).containsExactly(4);
    assertThat(second.dropped()).isEmpty(); // bucket 1's row is a day old: inside the retention
    record("b"); // bucket 2
    assertThat(outbox()).containsExactly("a@1", "b@2");

    clock.advance(Duration.ofDays(2));
    DatePartitions.Run third = parts.maintain(keep);
    assertThat(third.current()).isEqualTo(3);
    assertThat(third.heldBack()).containsExactly(1); // past the retention, still PENDING
    assertThat(third.dropped()).isEmpty(); // bucket 2's newest row is exactly at the cutoff

    settle("a", "DISPATCHED");
    clock.advance(Duration.ofMinutes(1));
    DatePartitions.Run fourth = parts.maintain(keep);
    assertThat(fourth.dropped()).isEmpty(); // bucket 1: dispatched a minute ago
    assertThat(fourth.heldBack()).containsExactly(2); // bucket 2: past, still PENDING

    clock.advance(Duration.ofDays(2));
    settle("b", "DISCARDED");
    DatePartitions.Run fifth = parts.maintain(keep);
    assertThat(fifth.switched()).isTrue();
    assertThat(fifth.dropped()).containsExactly(1, 3); // 3 held no row
    assertThat(fifth.heldBack()).isEmpty();
    assertThat(outbox()).containsExactly("b@2");
    assertThat(
            db.count("SELECT COUNT(*) FROM pg_class WHERE oid = to_regclass('postbox_outbox_b1')"))
        .isZero();

    record("c"); // still lands in a partition that exists
    assertThat(outbox()).last().asString().endsWith("@" + fifth.current());
  }

  @Test
  void theDeletingRetentionHandsOverToTheBuckets() {
    convert();
    Retention retention = Retention.outbox(tx, dialect, clock);
    record("old");
    settle("old", "DISPATCHED");
    assertThat(retention.purge(Duration.ofDays(1), 100)).isZero(); // no DELETE: buckets instead
    assertThat(outbox()).containsExactly("old@1");
    clock.advance(Duration.ofDays(1));
    retention.purge(Duration.ofDays(1), 100); // moves to bucket 2
    clock.advance(Duration.ofDays(1).plusMinutes(1));
    retention.purge(Duration.ofDays(1), 100);
    assertThat(outbox()).isEmpty();
    assertThat(
            db.count(
                "SELECT current_bucket FROM postbox_bucket WHERE table_name = 'postbox_outbox'"))
        .isEqualTo(3);
    assertThat(
            db.count("SELECT COUNT(*) FROM pg_class WHERE oid = to_regclass('postbox_outbox_b1')"))
        .as("dropped, not emptied")
        .isZero();
  }

  /** Converts, with the buckets opened at the test clock's now. */
  private void convert() {
    Migrations.partitionByDate(db.dataSource());
    clock.openDateBuckets(tx, dialect);
  }

  private void record(String id) {
    tx.inTransaction(
        c -> {
          rows.insert(
              c,
              OutboxEvent.builder()
                  .eventId(id)
                  .destination("orders")
                  .key("k")
                  .type("T")
                  .source("urn:t")
                  .payload("{}".getBytes(java.nio.charset.StandardCharsets.UTF_8))
                  .build(),
              clock.instant());
          return null;
        });
  }

  /** Settles a row now, by the test's clock. */
  private void settle(String id, String status) {
    tx.inTransaction(
        c -> {
          try (PreparedStatement ps =
              c.prepareStatement(
                  "UPDATE postbox_outbox SET status = ?, dispatched_at = ? WHERE event_id = ?")) {
            ps.setString(1, status);
            dialect.bind(ps, 2, clock.instant());
            ps.setString(3, id);
            return ps.executeUpdate();
          }
        });
  }

  /** "event id@bucket" per outbox row, in id order. */
  private List<String> outbox() {
    return tx.inTransaction(
        c -> {
          List<String> out = new ArrayList<>();
          try (PreparedStatement ps =
                  c.prepareStatement("SELECT event_id, bucket FROM postbox_outbox ORDER BY id");
              ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
              out.add(rs.getString(1) + "@" + rs.getInt(2));
            }
          }
          return out;
        });
  }

  private boolean partitioned(DatePartitions.Table table) {
    return tx.inTransaction(c -> DatePartitions.isPartitioned(c, dialect, table));
  }
}
