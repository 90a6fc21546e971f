package dev.postbox.runtime.inbox;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.runtime.Postbox;
import dev.postbox.runtime.PostboxSettings;
import dev.postbox.runtime.api.OutboxEvent;
import dev.postbox.runtime.api.OutboxRow;
import dev.postbox.runtime.outbox.OutboxRepository;
import dev.postbox.runtime.outbox.Partitioner;
import dev.postbox.runtime.testing.JdbcCallerTransaction;
import dev.postbox.runtime.testing.TestDatabase;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.InvalidEventException;
import dev.postbox.spi.testing.HostileEvents;
import dev.postbox.spi.testing.ReferenceBroker;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.statistics.Statistics;

/**
 * What {@code Outbox.record} accepts, every later stage carries, on each database: for arbitrary
 * hostile events, either recording refuses the event (in the caller's transaction, which rolls
 * back), or the committed outbox row comes back as exactly the event the caller recorded, and the
 * inbox's classifier, with a real failure policy over the same database, takes it as an event to
 * process, never as poison.
 */
class RecordedEventsPassTheInboxIT {

  private static final String DESTINATION = "recorded";
  private static final Map<TestDatabase.Kind, Fixture> FIXTURES =
      new EnumMap<>(TestDatabase.Kind.class);

  @Provide
  Arbitrary<HostileEvents.RawEvent> events() {
    return HostileEvents.events(ReferenceBroker.DEFAULT_MAX_MESSAGE_BYTES);
  }

  @Property(tries = 800)
  void onH2(@ForAll("events") HostileEvents.RawEvent raw) throws Exception {
    check(TestDatabase.Kind.H2, raw);
  }

  @Property(tries = 300)
  void onPostgreSql(@ForAll("events") HostileEvents.RawEvent raw) throws Exception {
    check(TestDatabase.Kind.POSTGRESQL, raw);
  }

  @Property(tries = 300)
  void onMariaDb(@ForAll("events") HostileEvents.RawEvent raw) throws Exception {
    check(TestDatabase.Kind.MARIADB, raw);
  }

  @AfterContainer
  static void close() {
    FIXTURES.values().forEach(Fixture::close);
  }

  private static void check(TestDatabase.Kind kind, HostileEvents.RawEvent raw) throws Exception {
    Fixture f = FIXTURES.computeIfAbsent(kind, Fixture::new);
    OutboxEvent event;
    try {
      event =
          new OutboxEvent(
              raw.id(),
              DESTINATION,
              raw.key(),
              raw.type(),
              "urn:postbox:wire",
              raw.subject(),
              raw.contentType(),
              raw.headers(),
              raw.payload(),
              raw.time());
    } catch (InvalidEventException refused) {
      Statistics.collect("refused by the event's rules");
      return;
    }
    try (JdbcCallerTransaction tx = new JdbcCallerTransaction(f.db.dataSource().getConnection())) {
      try {
        f.postbox.record(tx, event);
      } catch (InvalidEventException refused) {
        tx.rollback();
        Statistics.collect("refused by the broker's rules");
        return;
      }
      tx.commit();
    }
    Statistics.collect("carried");
    try {
      OutboxRow row = f.readBack(event);
      assertThat(row.toEnvelope()).as("the committed outbox row").isEqualTo(event.envelope());

      Delivery delivery = new Delivered(row.toEnvelope());
      List<Poison> poison = new java.util.ArrayList<>();
      Item item = f.classifier.classify(Tracked.of(delivery), poison);
      assertThat(poison).as("the classifier takes it as an event, not poison").isEmpty();
      assertThat(item).as("the classifier takes it as an event, not poison").isNotNull();
      assertThat(item.envelope).isEqualTo(event.envelope());
    } finally {
      f.delete(event.eventId());
    }
  }

  /** One database with Postbox on it (relay off: rows stay), and an inbox classifier. */
  private static final class Fixture {
    final TestDatabase db;
    final Postbox postbox;
    final Classifier classifier;

    Fixture(TestDatabase.Kind kind) {
      db = TestDatabase.create(kind);
      postbox =
          Postbox.builder()
              .settings(
                  PostboxSettings.parse(
                      Map.of(
                          "postbox.relay.enabled", "false",
                          "postbox.partitions", "1",
                          "postbox.durability.accept-unsafe", "true")))
              .dataSource(db.dataSource())
              .broker(ReferenceBroker.create())
              .start();
      classifier = new Classifier(InboxSettings.of("recorded-" + kind), false);
    }

    OutboxRow readBack(OutboxEvent event) throws Exception {
      OutboxRepository repo = postbox.outboxEngine().repository();
      int partition = Partitioner.partition(event.key(), event.eventId(), repo.partitions());
      try (Connection c = db.dataSource().getConnection()) {
        List<OutboxRow> rows = repo.claim(c, partition, Instant.now().plusSeconds(1), 100);
        return rows.stream()
            .filter(r -> r.eventId().equals(event.eventId()))
            .findFirst()
            .orElseThrow(() -> new AssertionError("no outbox row for " + event.eventId()));
      }
    }

    void delete(String eventId) throws Exception {
      try (Connection c = db.dataSource().getConnection();
          PreparedStatement ps =
              c.prepareStatement("DELETE FROM postbox_outbox WHERE event_id = ?")) {
        ps.setString(1, eventId);
        ps.executeUpdate();
      }
    }

    void close() {
      postbox.close();
      db.close();
    }
  }

  /** A delivery of a known envelope; a classifier that settles it has refused it. */
  private static final class Delivered implements Delivery {
    private final Envelope envelope;
    final List<String> settled = new ArrayList<>();

    Delivered(Envelope envelope) {
      this.envelope = envelope;
    }

    @Override
    public Envelope envelope() {
      return envelope;
    }

    @Override
    public int attempt() {
      return 1;
    }

    @Override
    public Map<String, String> metadata() {
      return Map.of();
    }

    @Override
    public void ack() {
      settled.add("ack");
    }

    @Override
    public void nack(Duration delay) {
      settled.add("nack");
    }
  }
}
