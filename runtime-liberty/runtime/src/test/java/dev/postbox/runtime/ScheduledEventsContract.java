package dev.postbox.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.postbox.broker.kafka.testing.KafkaTestBroker;
import dev.postbox.runtime.api.DeadLetter;
import dev.postbox.runtime.api.DeadLetterReason;
import dev.postbox.runtime.api.OutboxEvent;
import dev.postbox.runtime.api.OutboxRow;
import dev.postbox.runtime.api.RelayListener;
import dev.postbox.runtime.api.Schedule;
import dev.postbox.runtime.testing.JdbcCallerTransaction;
import dev.postbox.runtime.testing.TestDatabase;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.InvalidEventException;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Scheduled, cancellable and expiring events through a running Postbox (plain Java, Kafka in the
 * JVM), the same scenarios on each database. The poll interval is 30 s, so an event published
 * within a second of its due time was woken for by the due timer, not found by the poll.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class ScheduledEventsContract {

  private static final KafkaTestBroker KAFKA = KafkaTestBroker.shared();

  private TestDatabase db;
  private Postbox postbox;
  private final String topic = "scheduled-" + UUID.randomUUID();

  /** Handled event ids, in the order handled. */
  private final List<String> handled = Collections.synchronizedList(new ArrayList<>());

  /** When the relay was about to publish each row (this JVM's clock). */
  private final Map<String, Instant> publishing = new ConcurrentHashMap<>();

  private final List<String> expired = Collections.synchronizedList(new ArrayList<>());

  protected abstract TestDatabase.Kind kind();

  /** More settings for a subclass (date partitions). */
  protected Map<String, String> more() {
    return Map.of();
  }

  @BeforeAll
  void start() {
    db = TestDatabase.create(kind());
    Map<String, String> raw = new HashMap<>();
    raw.put("postbox.broker", "kafka");
    raw.put("postbox.broker.bootstrap.servers", KAFKA.bootstrapServers());
    raw.put("postbox.partitions", "4");
    raw.put("postbox.durability.accept-unsafe", "true");
    raw.put("postbox.poll-interval", "30s");
    raw.putAll(more());
    postbox =
        Postbox.builder()
            .settings(PostboxSettings.parse(raw))
            .dataSource(db.dataSource())
            .relayListener(
                new RelayListener() {
                  @Override
                  public void publishing(List<OutboxRow> batch) {
                    Instant now = Instant.now();
                    batch.forEach(r -> publishing.putIfAbsent(r.eventId(), now));
                  }

                  @Override
                  public void expired(List<OutboxRow> rows) {
                    rows.forEach(r -> expired.add(r.eventId()));
                  }
                })
            .subscribe(topic, "scheduled", Set.of(), (c, e) -> handled.add(e.id()))
            .start();
    // The relay takes its partitions at start; the first poll comes 30 s later.
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> postbox.outboxOperations().ownedPartitions().size() == 4);
  }

  @AfterAll
  void stop() {
    if (postbox != null) {
      postbox.close();
    }
    db.close();
  }

  @Test
  void aScheduledEventIsPublishedAtItsDueTimeNotBeforeAndNotByThePoll() throws SQLException {
    String id = record(event("due-" + UUID.randomUUID()), Schedule.after(Duration.ofMillis(1500)));
    Instant due = dueOf(id);
    assertThat(status(id)).isEqualTo("SCHEDULED");
    await().atMost(Duration.ofSeconds(20)).until(() -> handled.contains(id));
    Instant at = publishing.get(id);
    // the database's clock and this JVM's: the same machine's, measured to well under 50 ms
    assertThat(at).isAfterOrEqualTo(due.minusMillis(50));
    assertThat(Duration.between(due, at))
        .as("late by the due timer, not by the 30 s poll")
        .isLessThan(Duration.ofSeconds(2));
    // the consumer may see the event before the relay's mark commits
    await().atMost(Duration.ofSeconds(20)).until(() -> "DISPATCHED".equals(status(id)));
  }

  @Test
  void aScheduledEventDoesNotHoldItsKeyBack() throws SQLException {
    String key = "k-" + UUID.randomUUID();
    String later = record(event(key), Schedule.after(Duration.ofMillis(1200)));
    String now = record(event(key), Schedule.NOW);
    await().atMost(Duration.ofSeconds(20)).until(() -> handled.contains(later));
    assertThat(handled.indexOf(now)).isGreaterThanOrEqualTo(0).isLessThan(handled.indexOf(later));
    assertThat(publishing.get(now)).isBefore(dueOf(later));
  }

  @Test
  void inKeyOrderTheScheduledEventHoldsTheKeysLaterEventsOnlyBack() throws SQLException {
    String key = "k-" + UUID.randomUUID();
    String before = record(event(key), Schedule.NOW);
    String scheduled = record(event(key), Schedule.after(Duration.ofMillis(1200)).inKeyOrder());
    String after = record(event(key), Schedule.NOW);
    String otherKey = record(event("other-" + UUID.randomUUID()), Schedule.NOW);
    assertThat(status(scheduled)).isEqualTo("SCHEDULED_KEY");
    await().atMost(Duration.ofSeconds(20)).until(() -> handled.contains(after));
    assertThat(handled).containsSubsequence(before, scheduled, after);
    // the event before it and other keys' events were not held
    assertThat(publishing.get(before)).isBefore(dueOf(scheduled));
    assertThat(publishing.get(otherKey)).isBefore(dueOf(scheduled));
    assertThat(publishing.get(after)).isAfterOrEqualTo(publishing.get(scheduled));
  }

  @Test
  void aKeysDueEventsArePublishedDueThenIdWhenTheRelayIsBehindOnTheKey() throws Exception {
    // Before: the claim's id order put a scheduled event (recorded first) ahead of its key's events
    // recorded before it fell due.
    String key = "k-" + UUID.randomUUID();
    String held = "held-" + UUID.randomUUID();
    insertUnreadable(held, key); // parks FAILED once claimed: the key waits behind it
    record(event(neighbourOf(key, held)), Schedule.NOW); // wakes its partition (poll: 30 s)
    await().atMost(Duration.ofSeconds(20)).until(() -> "FAILED".equals(status(held)));
    String scheduled = record(event(key), Schedule.after(Duration.ofMillis(1500)));
    String before = record(event(key), Schedule.NOW); // waits behind held
    await().atMost(Duration.ofSeconds(20)).until(() -> "PENDING".equals(status(scheduled)));
    assertThat(handled).doesNotContain(before, scheduled);
    long heldId = one("SELECT id FROM postbox_outbox WHERE event_id = ?", held, ResultSet::getLong);
    assertThat(postbox.outboxOperations().discard(heldId)).isTrue();
    String after = record(event(key), Schedule.NOW); // fell due after the scheduled one
    await().atMost(Duration.ofSeconds(20)).until(() -> handled.contains(after));
    assertThat(handled).containsSubsequence(before, scheduled, after);
  }

  @Test
  void aCancelledEventIsNeverPublishedAndACancelSaysWhetherItWasStillScheduled()
      throws SQLException {
    String key = "k-" + UUID.randomUUID();
    String cancelled = record(event(key), Schedule.after(Duration.ofMillis(800)));
    String kept = record(event(key), Schedule.after(Duration.ofMillis(1200)));
    String plain = record(event(key), Schedule.NOW);
    try (JdbcCallerTransaction tx = new JdbcCallerTransaction(db.dataSource().getConnection())) {
      assertThat(postbox.cancel(tx, cancelled)).isTrue();
      assertThat(postbox.cancel(tx, cancelled)).as("cancelled before").isFalse();
      assertThat(postbox.cancel(tx, plain)).as("not scheduled").isFalse();
      assertThat(postbox.cancel(tx, "no-such-event")).isFalse();
      tx.commit();
    }
    // a cancel that rolls back cancels nothing
    try (JdbcCallerTransaction tx = new JdbcCallerTransaction(db.dataSource().getConnection())) {
      assertThat(postbox.cancel(tx, kept)).isTrue();
      tx.rollback();
    }
    await().atMost(Duration.ofSeconds(20)).until(() -> handled.contains(kept));
    assertThat(handled).contains(plain).doesNotContain(cancelled);
    assertThat(publishing).doesNotContainKey(cancelled);
    assertThat(status(cancelled)).isEqualTo("CANCELLED");
    // once due and published, a cancel is too late
    try (JdbcCallerTransaction tx = new JdbcCallerTransaction(db.dataSource().getConnection())) {
      assertThat(postbox.cancel(tx, kept)).isFalse();
      tx.commit();
    }
  }

  @Test
  void aCancelAfterTheRowFellDueAndWasClaimedReturnsFalse() throws SQLException {
    // The relay turns a due row PENDING in its claim; the cancel's UPDATE then matches nothing.
    String id = record(event("k-" + UUID.randomUUID()), Schedule.after(Duration.ofMillis(300)));
    await().atMost(Duration.ofSeconds(20)).until(() -> handled.contains(id));
    try (JdbcCallerTransaction tx = new JdbcCallerTransaction(db.dataSource().getConnection())) {
      assertThat(postbox.cancel(tx, id)).isFalse();
      tx.commit();
    }
    assertThat(status(id)).isEqualTo("DISPATCHED");
  }

  @Test
  void aCancelInFlightNeverHoldsTheRelayBackAndARolledBackOneLeavesTheEventToBePublished()
      throws SQLException {
    // The claim once waited on the row lock of an application's uncommitted cancel: every other
    // event of the partition waited with it, as long as that transaction stayed open.
    String key = "k-" + UUID.randomUUID();
    String scheduled = record(event(key), Schedule.after(Duration.ofMillis(300)));
    Instant due = dueOf(scheduled);
    try (JdbcCallerTransaction open = new JdbcCallerTransaction(db.dataSource().getConnection())) {
      assertThat(postbox.cancel(open, scheduled)).isTrue(); // not committed: the row is locked
      await()
          .atMost(Duration.ofSeconds(10))
          .until(() -> Instant.now().isAfter(due.plusMillis(300)));
      if (kind() != TestDatabase.Kind.MARIADB) {
        // InnoDB: the claim's locking range read of the partition's rows waits at the index record
        // the open cancel holds, and an insert into that partition waits behind the claim's locks
        // (docs/outbox.md): there the open cancel does hold the partition up.
        String sameKeyNow = record(event(key), Schedule.NOW); // the same partition
        await().atMost(Duration.ofSeconds(10)).until(() -> handled.contains(sameKeyNow));
      }
      assertThat(handled).doesNotContain(scheduled);
      open.rollback();
    }
    await().atMost(Duration.ofSeconds(20)).until(() -> handled.contains(scheduled));
    assertThat(status(scheduled)).isEqualTo("DISPATCHED");
  }

  @Test
  void anEventPastItsExpiryIsNeverPublishedButMarkedExpiredAndCounted() throws SQLException {
    String key = "k-" + UUID.randomUUID();
    // recorded already expired (as a header, as a producer may set it): the relay finds it so
    OutboxEvent stale =
        event(key).toBuilder()
            .header(Envelope.EXPIRYTIME, Instant.now().minusSeconds(1).toString())
            .build();
    String staleId = record(stale, Schedule.NOW);
    String next = record(event(key), Schedule.NOW);
    await().atMost(Duration.ofSeconds(20)).until(() -> handled.contains(next));
    assertThat(handled).doesNotContain(staleId);
    assertThat(publishing).doesNotContainKey(staleId);
    assertThat(expired).contains(staleId);
    assertThat(status(staleId)).isEqualTo("EXPIRED");
    assertThat(postbox.outboxEngine().expiredRows()).isPositive();
  }

  @Test
  void aRowWithAnUnreadableExpiryIsParkedFailedAndNothingElseWaits() throws SQLException {
    // Written by SQL (or before the rule): once, it threw in the claim and stalled its partitions.
    String bad = "bad-expiry-" + UUID.randomUUID();
    String key = "k-" + UUID.randomUUID();
    insertUnreadable(bad, key);
    List<String> others = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      others.add(record(event("other-" + i + "-" + UUID.randomUUID()), Schedule.NOW));
    }
    // one of them in the bad row's partition, whose commit wakes it (the poll is 30 s)
    others.add(record(event(neighbourOf(key, bad)), Schedule.NOW));
    await().atMost(Duration.ofSeconds(20)).until(() -> handled.containsAll(others));
    await().atMost(Duration.ofSeconds(20)).until(() -> "FAILED".equals(status(bad)));
    assertThat(handled).doesNotContain(bad);
  }

  @Test
  void anEventWithAFutureExpiryCarriesItAsItsExpirytimeAttribute() throws SQLException {
    String id =
        record(
            event("k-" + UUID.randomUUID()),
            Schedule.after(Duration.ofMillis(200)).expiresAfter(Duration.ofMinutes(5)));
    await().atMost(Duration.ofSeconds(20)).until(() -> handled.contains(id));
    String header = headerOf(id);
    assertThat(Instant.parse(header)).isAfter(dueOf(id).plus(Duration.ofMinutes(4)));
  }

  @Test
  void anExpiryBeforeTheDueTimeIsRefusedAndNothingIsRecorded() throws SQLException {
    Instant now = Instant.now();
    OutboxEvent e = event("k-" + UUID.randomUUID());
    try (JdbcCallerTransaction tx = new JdbcCallerTransaction(db.dataSource().getConnection())) {
      assertThatThrownBy(
              () ->
                  postbox.record(
                      tx, e, Schedule.at(now.plusSeconds(60)).expiresAt(now.plusSeconds(30))))
          .isInstanceOf(InvalidEventException.class)
          .hasMessageContaining("before it is due");
      assertThatThrownBy(tx::checkActive)
          .as("marked rollback only")
          .isInstanceOf(IllegalStateException.class);
      tx.rollback();
    }
    assertThat(countById(e.eventId())).isZero();
    assertThatThrownBy(() -> Schedule.after(Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new Schedule(null, null, null, null, false))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void theInboxDeadLettersADeliveryPastItsExpiryWithTheTimesAndAReplayHandlesIt() {
    Envelope late =
        Envelope.builder()
            .id("late-" + UUID.randomUUID())
            .source("urn:scheduled-it")
            .type("TestEvent")
            .key("k-" + UUID.randomUUID())
            .header(Envelope.EXPIRYTIME, "2020-01-01T00:00:00Z")
            .payload("{}".getBytes(StandardCharsets.UTF_8))
            .build();
    postbox.broker().publisher().publish(topic, late);
    var subscription = postbox.inbox().subscription(topic + "/scheduled").orElseThrow();
    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () ->
                subscription.deadLetters().open(100).stream()
                    .anyMatch(l -> l.eventId().equals(late.id())));
    DeadLetter letter =
        subscription.deadLetters().open(100).stream()
            .filter(l -> l.eventId().equals(late.id()))
            .findFirst()
            .orElseThrow();
    assertThat(letter.reason()).isEqualTo(DeadLetterReason.EXPIRED);
    assertThat(letter.error()).contains("expired at 2020-01-01T00:00:00Z", "received at");
    assertThat(handled).doesNotContain(late.id());
    assertThat(subscription.deadLetters().replay(letter.id())).isTrue();
    assertThat(handled).contains(late.id());
  }

  @Test
  void scheduledRowsAreCountedApartAndAreNotLag() throws SQLException {
    String far = record(event("k-" + UUID.randomUUID()), Schedule.after(Duration.ofHours(1)));
    var lag = postbox.outboxOperations().lag();
    assertThat(lag.scheduled()).isPositive();
    assertThat(lag.nextDue()).isNotNull();
    assertThat(lag.oldestPending()).isNull();
    try (JdbcCallerTransaction tx = new JdbcCallerTransaction(db.dataSource().getConnection())) {
      assertThat(postbox.cancel(tx, far)).isTrue();
      tx.commit();
    }
  }

  @Test
  void anOperatorListsScheduledEventsByFilterPagedAndCancelsOneOrAFilteredSet()
      throws SQLException {
    var ops = postbox.outboxOperations();
    String type = "Reminder-" + UUID.randomUUID();
    Instant now = Instant.now();
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      OutboxEvent e = event("k-" + i).toBuilder().type(type).build();
      ids.add(
          record(
              e, Schedule.at(now.plus(Duration.ofHours(1 + i))).expiresAfter(Duration.ofDays(1))));
    }
    var filter = new dev.postbox.runtime.api.ScheduledFilter(topic, type, null, null);
    var first = ops.scheduled(filter, 0, 2);
    var second = ops.scheduled(filter, first.get(1).id(), 2);
    var third = ops.scheduled(filter, second.get(1).id(), 2);
    assertThat(first).hasSize(2);
    assertThat(second).hasSize(2);
    assertThat(third).hasSize(1);
    List<String> listed = new ArrayList<>();
    for (var page : List.of(first, second, third)) {
      page.forEach(r -> listed.add(r.eventId()));
    }
    assertThat(listed).containsExactlyElementsOf(ids);
    var row = first.get(0);
    assertThat(row.type()).isEqualTo(type);
    assertThat(row.dueAt()).isAfter(now.plus(Duration.ofMinutes(59)));
    assertThat(row.expiresAt())
        .isEqualTo(
            row.dueAt().plus(Duration.ofDays(1)).truncatedTo(java.time.temporal.ChronoUnit.MILLIS));
    // the due window: due within the first two hours and a half
    var window =
        new dev.postbox.runtime.api.ScheduledFilter(
            topic, type, now, now.plus(Duration.ofMinutes(150)));
    assertThat(ops.scheduled(window, 0, 100))
        .extracting(r -> r.eventId())
        .containsExactly(ids.get(0), ids.get(1));
    assertThat(ops.cancelScheduled(ids.get(0))).isTrue();
    assertThat(ops.cancelScheduled(ids.get(0))).isFalse();
    assertThat(ops.cancelAllScheduled(window)).isEqualTo(1);
    assertThat(ops.cancelAllScheduled(filter)).isEqualTo(3);
    assertThat(ops.scheduled(filter, 0, 100)).isEmpty();
    assertThat(ids).allSatisfy(id -> assertThat(status(id)).isEqualTo("CANCELLED"));
  }

  // ---- helpers ----

  /**
   * A PENDING row written by SQL with an expirytime that is no RFC 3339 time: the relay parks it
   * FAILED when it claims it, and its key waits until an operator deals with it.
   */
  /** Another key in the same partition as {@code key}. */
  private static String neighbourOf(String key, String eventId) {
    int partition = dev.postbox.runtime.outbox.Partitioner.partition(key, eventId, 4);
    String neighbour;
    do {
      neighbour = "neighbour-" + UUID.randomUUID();
    } while (dev.postbox.runtime.outbox.Partitioner.partition(neighbour, null, 4) != partition);
    return neighbour;
  }

  private void insertUnreadable(String bad, String key) throws SQLException {
    try (var c = db.dataSource().getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "INSERT INTO postbox_outbox (event_id, destination, partition_no, event_key,"
                    + " event_type, source, headers, payload, event_time, created_at, status,"
                    + " attempts, next_attempt_at) VALUES (?, ?, ?, ?, 'TestEvent', 'urn:it', ?,"
                    + " ?, ?, ?, 'PENDING', 0, ?)")) {
      var dialect = postbox.outboxEngine().repository().dialect();
      Instant now = Instant.now();
      ps.setString(1, bad);
      ps.setString(2, topic);
      ps.setInt(3, dev.postbox.runtime.outbox.Partitioner.partition(key, bad, 4));
      ps.setString(4, key);
      ps.setString(5, "{\"expirytime\":\"1735689600000\"}");
      ps.setBytes(6, "{}".getBytes(StandardCharsets.UTF_8));
      dialect.bind(ps, 7, now);
      dialect.bind(ps, 8, now);
      dialect.bind(ps, 9, now);
      ps.executeUpdate();
    }
  }

  private String record(OutboxEvent e, Schedule schedule) throws SQLException {
    try (JdbcCallerTransaction tx = new JdbcCallerTransaction(db.dataSource().getConnection())) {
      String id = postbox.record(tx, e, schedule);
      tx.commit();
      return id;
    }
  }

  private OutboxEvent event(String key) {
    return OutboxEvent.builder()
        .destination(topic)
        .key(key)
        .type("TestEvent")
        .source("urn:scheduled-it")
        .json("{\"n\":1}")
        .build();
  }

  private String status(String eventId) {
    return one(
        "SELECT status FROM postbox_outbox WHERE event_id = ?", eventId, ResultSet::getString);
  }

  private String headerOf(String eventId) {
    String headers =
        one("SELECT headers FROM postbox_outbox WHERE event_id = ?", eventId, ResultSet::getString);
    return dev.postbox.runtime.db.StringMapJson.read(headers).get(Envelope.EXPIRYTIME);
  }

  private long countById(String eventId) {
    return one(
        "SELECT COUNT(*) FROM postbox_outbox WHERE event_id = ?", eventId, ResultSet::getLong);
  }

  /** The row's due time: next_attempt_at, which a SCHEDULED row keeps until it is published. */
  private Instant dueOf(String eventId) {
    return one(
        "SELECT next_attempt_at FROM postbox_outbox WHERE event_id = ?",
        eventId,
        (rs, i) -> postbox.outboxEngine().repository().dialect().read(rs, "next_attempt_at"));
  }

  private interface Column<T> {
    T get(ResultSet rs, int index) throws SQLException;
  }

  private <T> T one(String sql, String param, Column<T> column) {
    try (var c = db.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, param);
      try (ResultSet rs = ps.executeQuery()) {
        assertThat(rs.next()).as("a row for %s", param).isTrue();
        return column.get(rs, 1);
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }
}
