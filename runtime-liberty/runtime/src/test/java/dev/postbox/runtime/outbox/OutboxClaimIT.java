package dev.postbox.runtime.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.runtime.api.OutboxEvent;
import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Migrations;
import dev.postbox.runtime.db.Transactions;
import dev.postbox.runtime.testing.TestDatabase;
import java.sql.PreparedStatement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The claim query against each real database. */
class OutboxClaimIT {

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
