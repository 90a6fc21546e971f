package dev.postbox.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.runtime.api.Lease;
import dev.postbox.runtime.api.OutboxEvent;
import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.outbox.Partitioner;
import dev.postbox.runtime.testing.JdbcCallerTransaction;
import dev.postbox.runtime.testing.TestDatabase;
import dev.postbox.spi.testing.ReferenceBroker;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * On PostgreSQL, a commit whose partition another instance holds is announced with {@code
 * pg_notify} after the commit, on the listener's own connection: never for a transaction that rolls
 * back, and never inside the business transaction (which would take the database-wide notification
 * lock in its commit, and forbid PREPARE TRANSACTION). docs/scaling.md says this.
 */
class WakeUpAfterCommitIT {

  @Test
  void aRolledBackTransactionIsNeverAnnouncedAndACommittedOneIsAnnouncedAfterItsCommit()
      throws Exception {
    ReferenceBroker broker = ReferenceBroker.create();
    try (TestDatabase db = TestDatabase.create(TestDatabase.Kind.POSTGRESQL);
        Postbox holder = start(db, broker, "holder")) {
      await()
          .atMost(Duration.ofSeconds(30))
          .until(
              () ->
                  holder.outboxOperations().leases().stream()
                      .map(Lease::owner)
                      .allMatch("holder"::equals));
      try (Postbox writer = start(db, broker, "writer");
          Connection observer = DriverManager.getConnection(db.url())) {
        try (Statement s = observer.createStatement()) {
          s.execute("LISTEN " + Dialect.OUTBOX_CHANNEL);
        }
        OutboxEvent rolledBack = event("rolled-back");
        try (JdbcCallerTransaction tx =
            new JdbcCallerTransaction(db.dataSource().getConnection())) {
          writer.record(tx, rolledBack);
          tx.rollback();
        }
        // A marker sent afterwards: everything sent before it has arrived when it does.
        try (Connection c = DriverManager.getConnection(db.url());
            Statement s = c.createStatement()) {
          s.execute("NOTIFY " + Dialect.OUTBOX_CHANNEL + ", 'marker'");
        }
        List<String> beforeMarker = new ArrayList<>();
        await()
            .atMost(Duration.ofSeconds(10))
            .until(() -> receive(observer, beforeMarker).contains("marker"));
        assertThat(beforeMarker)
            .as("nothing announced for the rolled-back transaction")
            .containsExactly("marker");

        OutboxEvent committed = event("committed");
        String partition =
            Integer.toString(Partitioner.partition(committed.key(), committed.eventId(), 4));
        try (JdbcCallerTransaction tx =
            new JdbcCallerTransaction(db.dataSource().getConnection())) {
          writer.record(tx, committed);
          tx.commit();
        }
        List<String> after = new ArrayList<>();
        await()
            .atMost(Duration.ofSeconds(10))
            .until(
                () ->
                    receive(observer, after).stream()
                        .anyMatch(p -> List.of(p.split(",")).contains(partition)));
      }
    }
  }

  private static Postbox start(TestDatabase db, ReferenceBroker broker, String instance) {
    return Postbox.builder()
        .settings(
            PostboxSettings.parse(
                Map.of(
                    "postbox.partitions", "4",
                    "postbox.instance-id", instance,
                    "postbox.broker", "reference",
                    "postbox.durability.accept-unsafe", "true")))
        .dataSource(db.dataSource())
        .broker(broker)
        .start();
  }

  private static OutboxEvent event(String key) {
    return OutboxEvent.builder().destination("wake").key(key).type("Tested").json("{}").build();
  }

  /** Adds the payloads of the notifications that have arrived; returns the list. */
  private static List<String> receive(Connection observer, List<String> into) throws Exception {
    PGNotification[] got = observer.unwrap(PGConnection.class).getNotifications(200);
    if (got != null) {
      for (PGNotification n : got) {
        into.add(n.getParameter());
      }
    }
    return into;
  }
}
