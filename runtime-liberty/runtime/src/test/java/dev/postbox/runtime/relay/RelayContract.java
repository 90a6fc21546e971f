package dev.postbox.runtime.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.broker.kafka.testing.KafkaTestBroker;
import dev.postbox.runtime.db.DataAccessException;
import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Migrations;
import dev.postbox.runtime.db.Transactions;
import dev.postbox.runtime.outbox.OutboxEvent;
import dev.postbox.runtime.outbox.OutboxRepository;
import dev.postbox.runtime.retention.Retention;
import dev.postbox.runtime.testing.TestDatabase;
import dev.postbox.spi.Broker;
import dev.postbox.spi.Brokers;
import dev.postbox.spi.Consumer;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Subscription;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The relay against a real database and a real Kafka broker. Subclasses choose the database; the
 * scenarios are the same on every one.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class RelayContract {

  private static final KafkaTestBroker KAFKA = KafkaTestBroker.shared();

  private TestDatabase db;
  private DataSource dataSource;
  private Dialect dialect;
  private Transactions tx;
  private final List<AutoCloseable> closeAfterEach = new ArrayList<>();

  protected abstract TestDatabase.Kind kind();

  @BeforeAll
  void createDatabase() {
    db = TestDatabase.create(kind());
    dataSource = db.dataSource();
    dialect = Migrations.migrate(dataSource);
    tx = Transactions.jdbc(dataSource);
  }

  @AfterAll
  void dropDatabase() {
    db.close();
  }

  @AfterEach
  void closeRelays() throws Exception {
    for (AutoCloseable c : closeAfterEach) {
      c.close();
    }
    closeAfterEach.clear();
    tx.inTransaction(
        c -> {
          for (String table :
              List.of("postbox_outbox", "postbox_lease", "postbox_relay_instance")) {
            try (PreparedStatement ps = c.prepareStatement("DELETE FROM " + table)) {
              ps.executeUpdate();
            }
          }
          return null;
        });
  }

  // ---- scenarios ----

  @Test
  void aRolledBackTransactionPublishesNothingAndACommittedOneIsPublished() {
    String topic = topic(1);
    Broker broker = broker();
    Consumer consumer = track(broker.subscribe(Subscription.of(topic, "verify")));
    OutboxRepository repo = new OutboxRepository(dialect, 8);
    OutboxEvent rolledBack = event(topic, "k", "rolled back");
    OutboxEvent committed = event(topic, "k", "committed");
    try {
      tx.inTransaction(
          c -> {
            repo.insert(c, rolledBack, Instant.now());
            throw new java.sql.SQLException("business failure");
          });
    } catch (DataAccessException expected) {
      // the business transaction rolled back, and the outbox row with it
    }
    tx.inTransaction(
        c -> {
          repo.insert(c, committed, Instant.now());
          return null;
        });
    Relay relay = relay("solo", broker, settings("solo", 8));
    relay.start();

    List<String> ids =
        receive(consumer, 1, Duration.ofSeconds(30)).stream().map(d -> d.envelope().id()).toList();
    assertThat(ids).containsExactly(committed.eventId());
    await().atMost(Duration.ofSeconds(10)).until(() -> relay.admin().lag().pending() == 0);
    assertThat(receiveQuietly(consumer, Duration.ofSeconds(1)))
        .as("nothing else published")
        .isEmpty();
    assertThat(
            count("SELECT COUNT(*) FROM postbox_outbox WHERE event_id = ?", rolledBack.eventId()))
        .isZero();
  }

  @Test
  void threeInstancesPublish50000EventsOver500KeysInOrderAndLoseNothing() {
    String topic = topic(8);
    int partitions = 32;
    List<Relay> relays = new ArrayList<>();
    for (String name : List.of("relay-a", "relay-b", "relay-c")) {
      Relay r = relay(name, broker(), settings(name, partitions));
      r.start();
      relays.add(r);
    }
    // Let the leases settle into fair shares first, so every instance has partitions to work.
    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () ->
                relays.stream().allMatch(r -> !r.ownedPartitions().isEmpty())
                    && relays.stream().mapToInt(r -> r.ownedPartitions().size()).sum()
                        == partitions);

    OutboxRepository repo = new OutboxRepository(dialect, partitions);
    Map<String, Integer> nextSeq = new HashMap<>();
    List<OutboxEvent> all = new ArrayList<>();
    for (int i = 0; i < 50_000; i++) {
      String key = "key-" + (i % 500);
      int seq = nextSeq.merge(key, 1, Integer::sum) - 1;
      all.add(event(topic, key, key + ":" + seq));
    }
    for (int from = 0; from < all.size(); from += 1_000) {
      List<OutboxEvent> chunk = all.subList(from, from + 1_000);
      tx.inTransaction(
          c -> {
            repo.insertAll(c, chunk, Instant.now());
            return null;
          });
    }

    Consumer consumer = track(broker().subscribe(new Subscription(topic, "verify", 100_000)));
    Map<String, List<Integer>> firstSeen = new LinkedHashMap<>();
    Set<String> ids = new HashSet<>();
    long deadline = System.nanoTime() + Duration.ofMinutes(3).toNanos();
    while (ids.size() < all.size() && System.nanoTime() < deadline) {
      for (Delivery d : consumer.poll(5_000, Duration.ofMillis(500))) {
        if (ids.add(d.envelope().id())) {
          String[] keyAndSeq =
              new String(d.envelope().payload(), StandardCharsets.UTF_8).split(":");
          firstSeen
              .computeIfAbsent(keyAndSeq[0], k -> new ArrayList<>())
              .add(Integer.parseInt(keyAndSeq[1]));
        }
        d.ack();
      }
    }
    assertThat(ids).as("events published").hasSize(all.size());
    for (Map.Entry<String, List<Integer>> e : firstSeen.entrySet()) {
      assertThat(e.getValue()).as("first occurrences of %s", e.getKey()).isSorted().hasSize(100);
    }
    // The last batches reach the broker a moment before their transactions commit and count.
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> relays.stream().mapToLong(Relay::publishedCount).sum() >= all.size());
    for (Relay r : relays) {
      assertThat(r.publishedCount()).as("work done by one instance").isPositive();
    }
    assertThat(relays.get(0).admin().lag().pending()).isZero();
  }

  @Test
  void aKilledInstancesPartitionsAreTakenOverAfterTheLeaseExpires() {
    String topic = topic(4);
    int partitions = 16;
    Relay doomed =
        relay("doomed", broker(), settings("doomed", partitions).withLease(Duration.ofSeconds(2)));
    Relay survivor =
        relay(
            "survivor",
            broker(),
            settings("survivor", partitions).withLease(Duration.ofSeconds(2)));
    doomed.start();
    survivor.start();
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> !doomed.ownedPartitions().isEmpty() && !survivor.ownedPartitions().isEmpty());
    Set<Integer> lost = Set.copyOf(doomed.ownedPartitions());
    doomed.halt(); // a crash: no lease released

    OutboxRepository repo = new OutboxRepository(dialect, partitions);
    List<OutboxEvent> events = new ArrayList<>();
    for (int i = 0; i < 2_000; i++) {
      events.add(event(topic, "k" + (i % 64), "e" + i));
    }
    tx.inTransaction(
        c -> {
          repo.insertAll(c, events, Instant.now());
          return null;
        });
    long inLostPartitions =
        events.stream()
            .filter(
                e ->
                    lost.contains(
                        dev.postbox.runtime.outbox.Partitioner.partition(
                            e.key(), e.eventId(), partitions)))
            .count();
    assertThat(inLostPartitions)
        .as("events waiting in the dead instance's partitions")
        .isPositive();

    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> survivor.ownedPartitions().size() == partitions);
    await().atMost(Duration.ofSeconds(60)).until(() -> survivor.admin().lag().pending() == 0);
    Consumer consumer = track(broker().subscribe(new Subscription(topic, "verify", 10_000)));
    Set<String> got = new HashSet<>();
    receive(consumer, events.size(), Duration.ofSeconds(60))
        .forEach(d -> got.add(d.envelope().id()));
    assertThat(got).hasSize(events.size());
  }

  @Test
  void aPoisonRowBlocksOnlyItsKeyUntilTheApiDealsWithIt() {
    String topic = topic(2);
    Broker smallMessages =
        track(
            Brokers.open(
                "kafka",
                Map.of(
                    "bootstrap.servers", KAFKA.bootstrapServers(), "max.message.bytes", "1000")));
    Relay relay = relay("poison", smallMessages, settings("poison", 4));
    OutboxRepository repo = new OutboxRepository(dialect, 4);
    OutboxEvent poison =
        OutboxEvent.builder()
            .destination(topic)
            .key("blocked")
            .type("T")
            .payload(new byte[5_000])
            .build();
    OutboxEvent after1 = event(topic, "blocked", "after-1");
    OutboxEvent after2 = event(topic, "blocked", "after-2");
    OutboxEvent other = event(topic, "free", "other");
    tx.inTransaction(
        c -> {
          repo.insertAll(c, List.of(poison, after1, after2, other), Instant.now());
          return null;
        });
    relay.start();
    Consumer consumer = track(smallMessages.subscribe(Subscription.of(topic, "verify")));

    assertThat(receive(consumer, 1, Duration.ofSeconds(30)).get(0).envelope().id())
        .isEqualTo(other.eventId());
    await().atMost(Duration.ofSeconds(10)).until(() -> relay.admin().failed(10).size() == 1);
    OutboxRepository.FailedRow failed = relay.admin().failed(10).get(0);
    assertThat(failed.eventId()).isEqualTo(poison.eventId());
    assertThat(failed.error()).contains("PermanentBrokerException");
    assertThat(receiveQuietly(consumer, Duration.ofSeconds(2)))
        .as("the key waits behind its poison row")
        .isEmpty();
    assertThat(relay.admin().lag().pending()).isEqualTo(2);
    assertThat(relay.admin().lag().failed()).isEqualTo(1);

    // Retrying cannot cure an oversized event: it fails again. Discarding it frees the key.
    assertThat(relay.admin().retry(failed.id())).isTrue();
    await().atMost(Duration.ofSeconds(10)).until(() -> relay.admin().failed(10).size() == 1);
    assertThat(relay.admin().discard(failed.id())).isTrue();
    List<String> flowed =
        receive(consumer, 2, Duration.ofSeconds(30)).stream().map(d -> d.envelope().id()).toList();
    assertThat(flowed).containsExactly(after1.eventId(), after2.eventId());
  }

  @Test
  void aBrokerOutageNeverParksRowsAsFailedTheyRetryUntilItReturns() throws Exception {
    // Once, after max-attempts (3 here) a row was FAILED whatever the cause, and a ten-minute
    // outage parked the whole backlog. Now only permanent errors park a row.
    int closedPort;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
      closedPort = s.getLocalPort();
    }
    Broker down =
        track(
            Brokers.open(
                "kafka",
                Map.of(
                    "bootstrap.servers", "127.0.0.1:" + closedPort, "publish.timeout", "500ms")));
    Relay relay = relay("outage", down, settings("outage", 1));
    OutboxRepository repo = new OutboxRepository(dialect, 1);
    OutboxEvent e = event("outage-topic", "k", "during-the-outage");
    tx.inTransaction(
        c -> {
          repo.insert(c, e, Instant.now());
          return null;
        });
    relay.start();
    await()
        .atMost(Duration.ofSeconds(60))
        .until(() -> attemptsOf(e.eventId()) > 4); // well past max-attempts
    assertThat(relay.admin().lag().failed()).as("nothing parked").isZero();
    assertThat(relay.admin().lag().pending()).isEqualTo(1);
    // If the cause can never heal, the operator can still give the row up.
    long id =
        tx.inTransaction(
            c -> {
              try (java.sql.PreparedStatement ps =
                  c.prepareStatement("SELECT id FROM postbox_outbox WHERE event_id = ?")) {
                ps.setString(1, e.eventId());
                try (java.sql.ResultSet rs = ps.executeQuery()) {
                  rs.next();
                  return rs.getLong(1);
                }
              }
            });
    assertThat(relay.admin().discard(id)).isTrue();
    assertThat(relay.admin().lag().pending()).isZero();
  }

  private long attemptsOf(String eventId) {
    return tx.inTransaction(
        c -> {
          try (java.sql.PreparedStatement ps =
              c.prepareStatement("SELECT attempts FROM postbox_outbox WHERE event_id = ?")) {
            ps.setString(1, eventId);
            try (java.sql.ResultSet rs = ps.executeQuery()) {
              return rs.next() ? rs.getLong(1) : -1L;
            }
          }
        });
  }

  @Test
  void retentionDeletesSettledRowsInBoundedBatches() {
    OutboxRepository repo = new OutboxRepository(dialect, 4);
    List<OutboxEvent> events = new ArrayList<>();
    for (int i = 0; i < 25; i++) {
      events.add(event("retention", "k" + i, "e" + i));
    }
    OutboxEvent pending = event("retention", "p", "still pending");
    Instant longAgo = Instant.now().minus(Duration.ofDays(30));
    tx.inTransaction(
        c -> {
          repo.insertAll(c, events, longAgo);
          repo.insert(c, pending, longAgo);
          List<Long> ids = new ArrayList<>();
          try (PreparedStatement ps =
              c.prepareStatement("SELECT id FROM postbox_outbox WHERE event_id <> ?")) {
            ps.setString(1, pending.eventId());
            try (var rs = ps.executeQuery()) {
              while (rs.next()) {
                ids.add(rs.getLong(1));
              }
            }
          }
          repo.dispatched(c, ids, longAgo, false);
          return null;
        });
    Retention retention = new Retention(tx, dialect, Clock.systemUTC());
    Instant cutoff = Instant.now().minus(Duration.ofDays(7));
    assertThat(retention.purgeBatch(cutoff, 10)).isEqualTo(10);
    assertThat(retention.purgeBatch(cutoff, 10)).isEqualTo(10);
    assertThat(retention.purge(Duration.ofDays(7), 10)).isEqualTo(5);
    assertThat(count("SELECT COUNT(*) FROM postbox_outbox WHERE event_id <> ?", pending.eventId()))
        .isZero();
    assertThat(count("SELECT COUNT(*) FROM postbox_outbox WHERE event_id = ?", pending.eventId()))
        .as("pending rows stay")
        .isOne();
  }

  // ---- helpers ----

  private RelaySettings settings(String name, int partitions) {
    return RelaySettings.defaults(name)
        .withPartitions(partitions)
        .withLease(Duration.ofSeconds(3))
        .withPollInterval(Duration.ofMillis(200))
        .withRetry(new RetryPolicy(3, Duration.ofMillis(100), Duration.ofSeconds(1), 0.2));
  }

  private Relay relay(String name, Broker broker, RelaySettings settings) {
    ScheduledExecutorService scheduler = Executors.newScheduledThreadPool(1);
    ExecutorService workers = Executors.newFixedThreadPool(settings.workerThreads());
    Relay relay =
        new Relay(
            tx,
            dialect,
            broker.publisher(),
            settings,
            Clock.systemUTC(),
            scheduler,
            workers,
            RelayListener.NONE);
    closeAfterEach.add(
        () -> {
          relay.close();
          scheduler.shutdownNow();
          workers.shutdownNow();
        });
    return relay;
  }

  private Broker broker() {
    return track(Brokers.open("kafka", Map.of("bootstrap.servers", KAFKA.bootstrapServers())));
  }

  private <T extends AutoCloseable> T track(T closeable) {
    closeAfterEach.add(0, closeable);
    return closeable;
  }

  private static String topic(int partitions) {
    String name = "outbox-" + UUID.randomUUID();
    KAFKA.createTopic(name, partitions);
    return name;
  }

  private static OutboxEvent event(String topic, String key, String payload) {
    return OutboxEvent.builder()
        .destination(topic)
        .key(key)
        .type("TestEvent")
        .source("urn:relay-it")
        .payload(payload.getBytes(StandardCharsets.UTF_8))
        .build();
  }

  private static List<Delivery> receive(Consumer c, int n, Duration max) {
    List<Delivery> got = new ArrayList<>();
    long deadline = System.nanoTime() + max.toNanos();
    while (got.size() < n && System.nanoTime() < deadline) {
      for (Delivery d : c.poll(1_000, Duration.ofMillis(200))) {
        got.add(d);
        d.ack();
      }
    }
    assertThat(got).as("deliveries within %s", max).hasSizeGreaterThanOrEqualTo(n);
    return got;
  }

  private static List<Delivery> receiveQuietly(Consumer c, Duration period) {
    List<Delivery> got = new ArrayList<>();
    long until = System.nanoTime() + period.toNanos();
    while (System.nanoTime() < until) {
      got.addAll(c.poll(100, Duration.ofMillis(100)));
    }
    got.forEach(Delivery::ack);
    return got;
  }

  private long count(String sql, String param) {
    return tx.inTransaction(
        c -> {
          try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, param);
            try (var rs = ps.executeQuery()) {
              rs.next();
              return rs.getLong(1);
            }
          }
        });
  }
}
