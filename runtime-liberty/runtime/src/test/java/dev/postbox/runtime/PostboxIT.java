package dev.postbox.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.postbox.broker.kafka.testing.KafkaTestBroker;
import dev.postbox.runtime.api.InboxSubscription;
import dev.postbox.runtime.api.OutboxEvent;
import dev.postbox.runtime.testing.JdbcCallerTransaction;
import dev.postbox.runtime.testing.TestDatabase;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * {@link Postbox#builder()} in plain Java, as an application that embeds Postbox without a
 * container runs it: PostgreSQL, Kafka in the JVM, its own JDBC transactions. Events recorded in
 * committed transactions reach the handler once each; a rolled-back one never does.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PostboxIT {

  private static final KafkaTestBroker KAFKA = KafkaTestBroker.shared();

  private TestDatabase db;
  private Postbox postbox;
  private final String topic = "embedded-" + UUID.randomUUID();
  private final Map<String, AtomicInteger> handled = new ConcurrentHashMap<>();

  /**
   * What the relay told its listener, in order ("publishing id" then "published id"). The listener
   * throws from every call, as a broken tracer or metrics hook might: nothing of the relay may
   * depend on it.
   */
  private final List<String> heard = java.util.Collections.synchronizedList(new ArrayList<>());

  @BeforeAll
  void start() {
    db = TestDatabase.create(TestDatabase.Kind.POSTGRESQL);
    postbox =
        Postbox.builder()
            .settings(onKafka("postbox.poll-interval", "100ms"))
            .dataSource(db.dataSource())
            .relayListener(
                new dev.postbox.runtime.api.RelayListener() {
                  @Override
                  public void publishing(List<dev.postbox.runtime.api.OutboxRow> batch) {
                    batch.forEach(r -> heard.add("publishing " + r.eventId()));
                    throw new IllegalStateException("a broken listener");
                  }

                  @Override
                  public void published(
                      List<dev.postbox.runtime.api.OutboxRow> rows, java.time.Instant at) {
                    rows.forEach(r -> heard.add("published " + r.eventId()));
                    throw new IllegalStateException("a broken listener");
                  }
                })
            .subscribe(
                topic,
                "embedded",
                Set.of(),
                (connection, event) ->
                    handled
                        .computeIfAbsent(event.id(), id -> new AtomicInteger())
                        .incrementAndGet())
            .start();
  }

  @AfterAll
  void stop() {
    if (postbox != null) {
      postbox.close();
    }
    db.close();
  }

  @Test
  void committedEventsReachTheHandlerOnceAndRolledBackOnesNever() throws SQLException {
    List<String> committed = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      try (JdbcCallerTransaction tx = new JdbcCallerTransaction(db.dataSource().getConnection())) {
        committed.add(postbox.record(tx, event("order-" + (i % 3))));
        tx.commit();
      }
    }
    String rolledBack;
    try (JdbcCallerTransaction tx = new JdbcCallerTransaction(db.dataSource().getConnection())) {
      rolledBack = postbox.record(tx, event("order-0"));
      tx.rollback();
    }
    // Recorded after the rolled-back one on its key: once it arrives, the other would have too.
    String last;
    try (JdbcCallerTransaction tx = new JdbcCallerTransaction(db.dataSource().getConnection())) {
      last = postbox.record(tx, event("order-0"));
      tx.commit();
    }
    committed.add(last);

    await().atMost(Duration.ofSeconds(60)).until(() -> handled.keySet().containsAll(committed));
    assertThat(handled).doesNotContainKey(rolledBack);
    assertThat(handled.values()).allSatisfy(n -> assertThat(n.get()).isEqualTo(1));

    InboxSubscription s = postbox.inbox().subscription(topic + "/embedded").orElseThrow();
    assertThat(s.counts().processed()).isEqualTo(committed.size());
    assertThat(s.deferredQueue()).hasValue(0); // nothing failed: nothing waits for a retry
    assertThat(s.deadLetters().openCount()).isZero();
    assertThat(postbox.outboxOperations().publishedByThisInstance())
        .isGreaterThanOrEqualTo(committed.size());
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> postbox.outboxOperations().lag().pending() == 0);
    assertThat(postbox.outboxOperations().leases()).hasSize(4);
    // the listener threw from every call, and was told of each row before and after its publish
    for (String id : committed) {
      assertThat(heard).contains("publishing " + id, "published " + id);
      assertThat(heard.indexOf("publishing " + id)).isLessThan(heard.indexOf("published " + id));
    }
  }

  @Test
  void recordingOutsideATransactionFailsAndWritesNothing() throws SQLException {
    long before = db.count("SELECT COUNT(*) FROM postbox_outbox");
    JdbcCallerTransaction closed = new JdbcCallerTransaction(db.dataSource().getConnection());
    closed.rollback();
    closed.close();
    assertThatThrownBy(() -> postbox.record(closed, event("k")))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("no transaction");
    assertThat(db.count("SELECT COUNT(*) FROM postbox_outbox")).isEqualTo(before);
  }

  @Test
  void anEventTheBrokerCannotCarryIsRefusedInTheCallersTransactionNamingTheRule()
      throws SQLException {
    long before = db.count("SELECT COUNT(*) FROM postbox_outbox");
    try (JdbcCallerTransaction tx = new JdbcCallerTransaction(db.dataSource().getConnection())) {
      OutboxEvent badTopic = event("k").toBuilder().destination("orders and more").build();
      assertThatThrownBy(() -> postbox.record(tx, badTopic))
          .isInstanceOfSatisfying(
              dev.postbox.spi.InvalidEventException.class,
              e -> assertThat(e.field()).isEqualTo("destination"))
          .hasMessageContaining("by the kafka broker")
          .hasMessageContaining("is not a Kafka topic name");
      assertThatThrownBy(tx::checkActive)
          .as("the caller's transaction is marked rollback only")
          .isInstanceOf(IllegalStateException.class);
      tx.rollback();
    }
    try (JdbcCallerTransaction tx = new JdbcCallerTransaction(db.dataSource().getConnection())) {
      OutboxEvent huge = event("k").toBuilder().payload(new byte[1_000_001]).build();
      assertThatThrownBy(() -> postbox.record(tx, huge))
          .hasMessageContaining("envelope payload is 1000001 bytes, over this broker's limit");
      tx.rollback();
    }
    assertThat(db.count("SELECT COUNT(*) FROM postbox_outbox")).isEqualTo(before);
  }

  @Test
  void anInboxWithoutABrokerFailsAtStartNamingTheKey() {
    assertThatThrownBy(
            () ->
                Postbox.builder()
                    .settings(
                        PostboxSettings.parse(
                            Map.of(
                                "postbox.relay.enabled",
                                "false",
                                "postbox.durability.accept-unsafe",
                                "true")))
                    .dataSource(db.dataSource())
                    .subscribe(topic, "other", Set.of(), (c, e) -> {})
                    .start())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("postbox.broker");
  }

  @Test
  void aStartThatFailsHalfwayStopsEveryThreadItStarted() {
    List<Thread> threads = java.util.Collections.synchronizedList(new ArrayList<>());
    java.util.concurrent.ThreadFactory counting =
        r -> {
          Thread t = new Thread(r, "failing-start-" + threads.size());
          threads.add(t);
          return t;
        };
    String destination = topic + "-twice";
    assertThatThrownBy(
            () ->
                Postbox.builder()
                    .settings(onKafka())
                    .dataSource(db.dataSource())
                    .threadFactory(counting)
                    // the first subscription's loop runs before the second fails the start
                    .subscribe(destination, "g", Set.of(), (c, e) -> {})
                    .subscribe(destination, "g", Set.of(), (c, e) -> {})
                    .start())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("registered twice");
    assertThat(threads).isNotEmpty();
    // well within a cached pool's 60 s keep-alive: the pools must be shut down, not left to idle
    await()
        .atMost(Duration.ofSeconds(20))
        .untilAsserted(
            () ->
                assertThat(List.copyOf(threads))
                    .as("threads still running after the failed start")
                    .noneMatch(Thread::isAlive));
  }

  @Test
  void theDatePartitionsSettingConvertsAtStartOnPostgresAndFailsElsewhereNamingWhy() {
    Map<String, String> raw =
        Map.of(
            "postbox.relay.enabled", "false",
            "postbox.durability.accept-unsafe", "true",
            "postbox.date-partitions", "true",
            "postbox.date-partitions.interval", "2d");
    try (TestDatabase pg = TestDatabase.create(TestDatabase.Kind.POSTGRESQL)) {
      try (Postbox started =
          Postbox.builder()
              .settings(PostboxSettings.parse(raw))
              .dataSource(pg.dataSource())
              .start()) {
        assertThat(
                pg.count(
                    "SELECT COUNT(*) FROM pg_partitioned_table p JOIN pg_class c"
                        + " ON c.oid = p.partrelid WHERE c.oid IN"
                        + " (to_regclass('postbox_outbox'), to_regclass('postbox_inbox'))"))
            .isEqualTo(2);
        assertThat(pg.count("SELECT MIN(interval_secs) FROM postbox_bucket"))
            .isEqualTo(Duration.ofDays(2).toSeconds());
      }
    }
    try (TestDatabase pg = TestDatabase.create(TestDatabase.Kind.POSTGRESQL)) {
      dev.postbox.runtime.db.Migrations.migrate(pg.dataSource());
      Map<String, String> noMigrate = new HashMap<>(raw);
      noMigrate.put("postbox.migrate", "false");
      assertThatThrownBy(
              () ->
                  Postbox.builder()
                      .settings(PostboxSettings.parse(noMigrate))
                      .dataSource(pg.dataSource())
                      .start())
          .hasMessageContaining("db/postbox/postgresql-date-partitions/V1__date_partitions.sql");
    }
    try (TestDatabase h2 = TestDatabase.create(TestDatabase.Kind.H2)) {
      assertThatThrownBy(
              () ->
                  Postbox.builder()
                      .settings(PostboxSettings.parse(raw))
                      .dataSource(h2.dataSource())
                      .start())
          .hasMessageContaining("postbox.date-partitions=true needs PostgreSQL");
    }
  }

  /** Kafka in the JVM, four partitions, and the given keys (key, value, ...) besides. */
  private static PostboxSettings onKafka(String... more) {
    Map<String, String> raw = new HashMap<>();
    raw.put("postbox.broker", "kafka");
    raw.put("postbox.broker.bootstrap.servers", KAFKA.bootstrapServers());
    raw.put("postbox.partitions", "4");
    // the test database runs with a developer machine's settings
    raw.put("postbox.durability.accept-unsafe", "true");
    for (int i = 0; i < more.length; i += 2) {
      raw.put(more[i], more[i + 1]);
    }
    return PostboxSettings.parse(raw);
  }

  private OutboxEvent event(String key) {
    return OutboxEvent.builder().destination(topic).key(key).type("Tested").json("{}").build();
  }
}
