package dev.postbox.runtime.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.runtime.api.OutboxEvent;
import dev.postbox.runtime.api.OutboxRow;
import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Migrations;
import dev.postbox.runtime.db.Transactions;
import dev.postbox.runtime.testing.TestDatabase;
import java.sql.PreparedStatement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The claim query against each real database. */
class OutboxClaimIT {

  @ParameterizedTest
  @EnumSource(TestDatabase.Kind.class)
  void aFullClaimHoldsBackAScheduledRowThatAnUnreadRowOfItsKeyFellDueBefore(
      TestDatabase.Kind kind) {
    // The look-up of the first unread plain row (DueOrder.withoutOvertaken's horizon), on each
    // database: the claim reads the scheduled row and another key's row, not its key's row behind
    try (TestDatabase db = TestDatabase.create(kind)) {
      Dialect dialect = Migrations.migrate(db.dataSource());
      Transactions tx = Transactions.jdbc(db.dataSource());
      OutboxRepository repo = new OutboxRepository(dialect, 1);
      Instant t0 = Instant.now().minusSeconds(60);
      tx.inTransaction(
          c -> {
            repo.insertScheduled(c, event("scheduled", "k"), t0, t0.plusSeconds(30), false);
            repo.insert(c, event("other", "x"), t0.plusSeconds(1));
            repo.insert(c, event("before", "k"), t0.plusSeconds(10)); // before it fell due
            new ScheduledRepository(dialect).promoteDue(c, List.of(0), t0.plusSeconds(40));
            return null;
          });
      List<OutboxRow> kept =
          tx.inTransaction(
              c -> repo.withoutOvertaken(c, 0, repo.claim(c, 0, Instant.now(), 2), true));
      assertThat(kept).extracting(OutboxRow::eventId).containsExactly("other");
    }
  }

  @ParameterizedTest
  @EnumSource(TestDatabase.Kind.class)
  void moreWaitingKeysThanTheQueryCanExcludeStillLeaveEveryOtherKeyClaimable(
      TestDatabase.Kind kind) {
    try (TestDatabase db = TestDatabase.create(kind)) {
      Dialect dialect = Migrations.migrate(db.dataSource());
      Transactions tx = Transactions.jdbc(db.dataSource());
      OutboxRepository repo = new OutboxRepository(dialect, 1);
      int waitingKeys = OutboxRepository.MAX_EXCLUDED_KEYS + 100;
      List<OutboxEvent> events = new ArrayList<>();
      for (int i = 0; i < waitingKeys; i++) {
        events.add(event("fail-" + i, "w-" + i)); // parked: holds its key back
        events.add(event("behind-" + i, "w-" + i)); // due, but must wait behind it
      }
      events.add(event("free", "free-key")); // nothing holds this key back
      Instant now = Instant.now();
      tx.inTransaction(
          c -> {
            repo.insertAll(c, events, now);
            try (PreparedStatement ps =
                c.prepareStatement(
                    "UPDATE postbox_outbox SET status = 'FAILED' WHERE event_id LIKE 'fail-%'")) {
              ps.executeUpdate();
            }
            return null;
          });
      List<OutboxRow> claimed = tx.inTransaction(c -> repo.claim(c, 0, now.plusSeconds(1), 500));
      assertThat(claimed).extracting(OutboxRow::eventId).containsExactly("free");
    }
  }

  /**
   * Marking rows dispatched, the relay's commonest write, adds no entry to the indexes of the work
   * still to do (PostgreSQL's partial indexes, V8): the claim, due and failed indexes do not grow
   * by a byte when 20,000 pending rows are dispatched. A B-tree never shrinks in place, so a grown
   * index would show every entry the update added, as the full indexes before V8 did.
   */
  @Test
  void dispatchingRowsAddsNothingToTheIndexesOfPendingWork() {
    try (TestDatabase db = TestDatabase.create(TestDatabase.Kind.POSTGRESQL)) {
      Dialect dialect = Migrations.migrate(db.dataSource());
      Transactions tx = Transactions.jdbc(db.dataSource());
      OutboxRepository repo = new OutboxRepository(dialect, 64);
      List<OutboxEvent> events = new ArrayList<>();
      for (int i = 0; i < 20_000; i++) {
        events.add(event("e-" + i, "k-" + (i % 500)));
      }
      Instant now = Instant.now();
      tx.inTransaction(
          c -> {
            repo.insertAll(c, events, now);
            return null;
          });
      Map<String, Long> before = indexSizes(tx);
      tx.inTransaction(
          c -> {
            for (int p = 0; p < 64; p++) {
              List<OutboxRow> claimed = repo.claim(c, p, now.plusSeconds(1), 1_000);
              repo.dispatched(c, claimed.stream().map(OutboxRow::id).toList(), now, false);
            }
            return null;
          });
      assertThat(db.count("SELECT COUNT(*) FROM postbox_outbox WHERE status = 'DISPATCHED'"))
          .isEqualTo(20_000);
      Map<String, Long> after = indexSizes(tx);
      for (String pending : List.of("postbox_outbox_pending", "postbox_outbox_pending_due")) {
        assertThat(after.get(pending)).as(pending).isNotNull().isEqualTo(before.get(pending));
      }
      assertThat(after.get("postbox_outbox_failed"))
          .isNotNull()
          .isEqualTo(before.get("postbox_outbox_failed"));
      assertThat(after.get("postbox_outbox_settled_at"))
          .as("retention's index takes the dispatched rows")
          .isGreaterThan(before.get("postbox_outbox_settled_at"));
      assertThat(tx.inTransaction(c -> new FailedRowRepository(repo.dialect()).lag(c)).pending())
          .isZero();
    }
  }

  /**
   * The poll asks which partitions have due rows every poll interval, on every instance. During a
   * broker outage the whole backlog waits for the next probe, pending but not due: the poll must
   * not read it. 300,000 such rows and one due one; the poll reads a few pages per partition (193
   * in all when measured), not the backlog (a plain {@code SELECT DISTINCT} over V8's
   * partition-first index read its 1,609 pages, and more with every row).
   */
  @Test
  void thePollDoesNotReadABacklogThatIsNotDue() {
    try (TestDatabase db = TestDatabase.create(TestDatabase.Kind.POSTGRESQL)) {
      Dialect dialect = Migrations.migrate(db.dataSource());
      Transactions tx = Transactions.jdbc(db.dataSource());
      OutboxRepository repo = new OutboxRepository(dialect, 64);
      Instant now = Instant.now();
      tx.inTransaction(
          c -> {
            try (PreparedStatement ps = c.prepareStatement(dialect.insertLeaseIfAbsent())) {
              for (int p = 0; p < 64; p++) {
                ps.setInt(1, p);
                ps.addBatch();
              }
              ps.executeBatch();
            }
            // 300,000 rows waiting for a probe an hour from now, each at its own instant
            try (PreparedStatement ps =
                c.prepareStatement(
                    "INSERT INTO postbox_outbox (event_id, destination, partition_no, event_key,"
                        + " event_type, source, headers, payload, event_time, created_at, status,"
                        + " next_attempt_at) SELECT 'held-' || i, 'orders', i % 64, 'k-' || (i % 997),"
                        + " 'T', 'urn:s', '{}', '\\x7b7d'::bytea, now(), now(), 'PENDING',"
                        + " now() + interval '1 hour' + i * interval '1 millisecond'"
                        + " FROM generate_series(1, 300000) i")) {
              ps.executeUpdate();
            }
            repo.insert(c, event("due", "free-key"), now.minusSeconds(1));
            return null;
          });
      db.execute("ANALYZE postbox_outbox");
      int duePartition = Partitioner.partition("free-key", "due", 64);
      java.util.Set<Integer> due = tx.inTransaction(c -> repo.partitionsWithWork(c, now));
      assertThat(due).containsExactly(duePartition);
      long pages =
          tx.inTransaction(
              c -> {
                try (PreparedStatement ps =
                    c.prepareStatement(
                        "EXPLAIN (ANALYZE, BUFFERS) " + dialect.partitionsWithWork())) {
                  dialect.bind(ps, 1, now);
                  try (java.sql.ResultSet rs = ps.executeQuery()) {
                    rs.next(); // the top node
                    rs.next();
                    String plan = rs.getString(1);
                    while (!plan.contains("Buffers:") && rs.next()) {
                      plan = rs.getString(1);
                    }
                    java.util.regex.Matcher m =
                        java.util.regex.Pattern.compile("(hit|read)=(\\d+)").matcher(plan);
                    long n = 0;
                    while (m.find()) {
                      n += Long.parseLong(m.group(2));
                    }
                    return n;
                  }
                }
              });
      assertThat(pages).as("pages the poll read").isPositive().isLessThan(500);
    }
  }

  private static Map<String, Long> indexSizes(Transactions tx) {
    return tx.inTransaction(
        c -> {
          Map<String, Long> sizes = new TreeMap<>();
          try (PreparedStatement ps =
                  c.prepareStatement(
                      "SELECT indexname, pg_relation_size(format('%I.%I', schemaname, indexname))"
                          + " FROM pg_indexes WHERE tablename = 'postbox_outbox'"
                          + " AND schemaname = current_schema()");
              java.sql.ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
              sizes.put(rs.getString(1), rs.getLong(2));
            }
          }
          return sizes;
        });
  }

  private static OutboxEvent event(String id, String key) {
    return OutboxEvent.builder()
        .eventId(id)
        .destination("orders")
        .key(key)
        .type("T")
        .source("urn:s")
        .json("{}")
        .build();
  }
}
