package dev.postbox.runtime.inbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

import dev.postbox.broker.kafka.testing.KafkaTestBroker;
import dev.postbox.runtime.api.DeadLetter;
import dev.postbox.runtime.api.DeadLetterGroup;
import dev.postbox.runtime.api.DeadLetterReason;
import dev.postbox.runtime.api.InboxListener;
import dev.postbox.runtime.api.NotReplayableException;
import dev.postbox.runtime.api.ReplayResult;
import dev.postbox.runtime.api.UnprocessableEventException;
import dev.postbox.runtime.common.RetryPolicy;
import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Migrations;
import dev.postbox.runtime.db.Transactions;
import dev.postbox.runtime.retention.Retention;
import dev.postbox.runtime.testing.TestDatabase;
import dev.postbox.spi.Broker;
import dev.postbox.spi.Brokers;
import dev.postbox.spi.Consumer;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.Subscription;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The inbox against a real database and a real Kafka broker; subclasses choose the database and the
 * mode (inline or deferred). Every scenario runs in both modes.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class InboxContract {

  private static final KafkaTestBroker KAFKA = KafkaTestBroker.shared();

  private TestDatabase db;
  private Dialect dialect;
  private Transactions tx;
  private Broker broker;
  private final List<AutoCloseable> closeAfter = new ArrayList<>();
  private final AtomicBoolean stop = new AtomicBoolean();

  protected abstract TestDatabase.Kind kind();

  /** Deferred mode: receive and ack first, handlers on workers claiming queued events. */
  protected boolean deferred() {
    return false;
  }

  /** Whether the inbox is date-partitioned ({@code postbox.date-partitions}, PostgreSQL). */
  protected boolean datePartitioned() {
    return false;
  }

  @BeforeAll
  void createDatabase() {
    db = TestDatabase.create(kind());
    dialect = Migrations.migrate(db.dataSource());
    if (datePartitioned()) {
      Migrations.partitionByDate(db.dataSource());
    }
    // as an application server's statement cache closes statements (see StatementCacheDataSource)
    tx =
        Transactions.jdbc(
            dev.postbox.runtime.testing.StatementCacheDataSource.wrap(db.dataSource()));
    tx.inTransaction(
        c -> {
          try (PreparedStatement ps =
              c.prepareStatement(
                  "CREATE TABLE it_effect (seq "
                      + identity()
                      + ", event_id VARCHAR(256) NOT NULL, note VARCHAR(200))")) {
            ps.execute(); // no unique constraint: only the inbox may stop a second effect
          }
          return null;
        });
    broker =
        Brokers.open(
            "kafka", Map.of("bootstrap.servers", KAFKA.bootstrapServers(), "nack.max.delay", "1m"));
  }

  @AfterAll
  void dropDatabase() {
    broker.close();
    db.close();
  }

  @AfterEach
  void stopConsumers() throws Exception {
    closeConsumers();
    tx.inTransaction(
        c -> {
          try (PreparedStatement ps = c.prepareStatement("DELETE FROM it_effect")) {
            ps.executeUpdate();
          }
          return null;
        });
  }

  /** Closes every consumer, loop and worker the test started, as a stop of the process would. */
  private void closeConsumers() throws Exception {
    stop.set(true);
    // Every consumer is closed even if one close fails: a consumer left open stays in its group.
    Exception first = null;
    for (AutoCloseable c : closeAfter) {
      try {
        c.close();
      } catch (Exception e) {
        if (first == null) {
          first = e;
        } else {
          first.addSuppressed(e);
        }
      }
    }
    closeAfter.clear();
    stop.set(false);
    if (first != null) {
      throw first;
    }
  }

  @Test
  void
      tenThousandEventsEachDeliveredUpToThreeTimesToTwoConcurrentConsumersGiveTenThousandEffects() {
    String topic = topic(4);
    String subscription = "payments-" + UUID.randomUUID();
    Random random = new Random(11);
    List<Envelope> published = new ArrayList<>();
    List<Envelope> events = new ArrayList<>();
    for (int i = 0; i < 10_000; i++) {
      Envelope e = event("k" + (i % 100), "e" + i);
      events.add(e);
      int copies = 1 + random.nextInt(3);
      for (int n = 0; n < copies; n++) {
        published.add(e);
      }
    }
    for (int from = 0; from < published.size(); from += 1_000) {
      broker
          .publisher()
          .publishAll(topic, published.subList(from, Math.min(published.size(), from + 1_000)));
    }
    InboxHandler effect = (c, e) -> insertEffect(c, e);
    // Two groups read every record: each event reaches both consumers, concurrently, with one
    // inbox subscription between them.
    run(topic, "group-a", subscription, effect, InboxSettings.of(subscription));
    run(topic, "group-b", subscription, effect, InboxSettings.of(subscription));

    await()
        .atMost(Duration.ofMinutes(3))
        .until(() -> effects(null) >= 10_000 && inboxRows(subscription) == 10_000);
    await()
        .during(Duration.ofSeconds(2))
        .atMost(Duration.ofSeconds(10))
        .until(() -> effects(null) == 10_000);
    assertThat(distinctEffects()).isEqualTo(10_000);
    // Every delivery was either the one effect or a rejected duplicate, counted durably. The
    // slower group may still be rejecting its last duplicates after the effects have settled, so
    // the count is awaited; the effects are checked again to show the late ones changed nothing.
    long expectedDuplicates = 2L * published.size() - 10_000;
    InboxCounters counters = new InboxCounters(tx, dialect);
    await()
        .atMost(Duration.ofMinutes(2))
        .untilAsserted(
            () ->
                assertThat(counters.duplicates(subscription))
                    .isGreaterThanOrEqualTo(expectedDuplicates));
    assertThat(effects(null)).isEqualTo(10_000);
  }

  @Test
  void aHandlerThatFailsTwiceThenSucceedsHasOneEffect() {
    String topic = topic(1);
    String subscription = "flaky-" + UUID.randomUUID();
    Envelope e = event("k", "flaky");
    AtomicInteger calls = new AtomicInteger();
    InboxHandler flaky =
        (c, ev) -> {
          insertEffect(c, ev); // written, then rolled back by the failure
          if (calls.incrementAndGet() <= 2) {
            throw new IllegalStateException("transient #" + calls.get());
          }
        };
    run(topic, "g", subscription, flaky, settings(subscription, 5));
    broker.publisher().publish(topic, e);
    await().atMost(Duration.ofSeconds(30)).until(() -> effects(e.id()) == 1);
    assertThat(calls.get()).isEqualTo(3);
    await()
        .during(Duration.ofSeconds(1))
        .atMost(Duration.ofSeconds(5))
        .until(() -> effects(e.id()) == 1);
  }

  @Test
  void aHandlerThatAlwaysFailsIsDeadLetteredAndAReplayAfterTheFixHasOneEffect() {
    String topic = topic(1);
    String subscription = "broken-" + UUID.randomUUID();
    AtomicBoolean fixed = new AtomicBoolean();
    InboxHandler handler = failingUntil(fixed, new IllegalArgumentException("bug #42"));
    run(topic, "g", subscription, handler, settings(subscription, 3));
    Envelope e = event("k", "doomed");
    Envelope next = event("k", "next");
    broker.publisher().publish(topic, e);
    broker.publisher().publish(topic, next);

    DeadLetters letters = new DeadLetters(tx, dialect, subscription, handler, Clock.systemUTC());
    await().atMost(Duration.ofSeconds(30)).until(() -> letters.open(10).size() == 2);
    DeadLetter dl =
        letters.open(10).stream().filter(d -> d.eventId().equals(e.id())).findFirst().orElseThrow();
    assertThat(dl.reason()).isEqualTo(DeadLetterReason.HANDLER_FAILED);
    assertThat(dl.payload()).as("a listing loads no payloads").isNull();
    assertThat(letters.get(dl.id()).orElseThrow().payload()).isEqualTo(e.payload());
    assertThat(dl.error()).contains("bug #42");
    assertThat(dl.attempts()).isEqualTo(3);
    assertThat(effects(null)).isZero();

    fixed.set(true);
    assertThat(letters.replay(dl.id())).isTrue();
    assertThatThrownBy(() -> letters.replay(dl.id())).hasMessageContaining("REPLAYED");
    assertThat(effects(e.id())).isEqualTo(1);
    // The same event redelivered later is a duplicate of the replay.
    broker.publisher().publish(topic, e);
    await()
        .during(Duration.ofSeconds(1))
        .atMost(Duration.ofSeconds(10))
        .until(() -> effects(e.id()) == 1);
  }

  @Test
  void anEventTheHandlerRejectsAsUnprocessableIsDeadLetteredWithoutRetries() {
    String topic = topic(1);
    String subscription = "reject-" + UUID.randomUUID();
    AtomicInteger badCalls = new AtomicInteger();
    run(
        topic,
        "g",
        subscription,
        (c, ev) -> {
          if (new String(ev.payload(), StandardCharsets.UTF_8).equals("bad")) {
            badCalls.incrementAndGet();
            throw new UnprocessableEventException("amount is not a number", null);
          }
          insertEffect(c, ev);
        },
        settings(subscription, 5));
    Envelope bad = event("k", "bad");
    Envelope good = event("k", "good");
    broker.publisher().publishAll(topic, List.of(bad, good));
    DeadLetters letters =
        new DeadLetters(tx, dialect, subscription, (c, ev) -> {}, Clock.systemUTC());
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> effects(good.id()) == 1 && letters.open(10).size() == 1);
    DeadLetter dl = letters.open(10).get(0);
    assertThat(dl.eventId()).isEqualTo(bad.id());
    assertThat(dl.reason()).isEqualTo(DeadLetterReason.MALFORMED);
    assertThat(dl.error()).contains("amount is not a number");
    assertThat(dl.attempts()).as("no retries").isEqualTo(1);
    // At most twice: once in the batch that rolled back, once alone to isolate it.
    assertThat(badCalls.get()).isLessThanOrEqualTo(2);
  }

  @Test
  void bulkReplayByTypeAndTheAutomaticRedriveRunDeadLettersThroughTheIdempotentPath() {
    String topic = topic(1);
    String subscription = "redrive-" + UUID.randomUUID();
    AtomicBoolean fixed = new AtomicBoolean();
    InboxHandler handler = failingUntil(fixed, new IllegalStateException("downstream down"));
    run(topic, "g", subscription, handler, settings(subscription, 1));
    Envelope refund1 = event("r1", "refund-1").toBuilder().type("RefundIssued").build();
    Envelope refund2 = event("r2", "refund-2").toBuilder().type("RefundIssued").build();
    Envelope order = event("o1", "order-1");
    broker.publisher().publishAll(topic, List.of(refund1, refund2, order));
    DeadLetters letters = new DeadLetters(tx, dialect, subscription, handler, Clock.systemUTC());
    await().atMost(Duration.ofSeconds(30)).until(() -> letters.open(10).size() == 3);

    assertThat(letters.redrive(Duration.ofHours(1), 3, 10)).as("not due yet").isZero();
    assertThat(letters.redrive(Duration.ZERO, 1, 10)).as("still broken").isZero();
    assertThat(letters.open(10)).extracting(DeadLetter::redrives).containsOnly(1);
    assertThat(letters.redrive(Duration.ZERO, 1, 10)).as("out of re-drives").isZero();

    fixed.set(true);
    ReplayResult refunds = letters.replayAll("RefundIssued");
    assertThat(refunds.replayed()).isEqualTo(2);
    assertThat(refunds.failed()).isZero();
    assertThat(letters.open(10)).extracting(DeadLetter::eventId).containsExactly(order.id());
    assertThat(letters.redrive(Duration.ZERO, 2, 10)).isEqualTo(1);
    assertThat(letters.open(10)).isEmpty();
    assertThat(effects(null)).isEqualTo(3);
    assertThat(letters.replayAll(null).replayed()).isZero();
  }

  @Test
  void deadLettersAreGroupedByReasonAndErrorClassAndAGroupIsReplayedOrDiscardedAsSeen() {
    String topic = topic(1);
    String subscription = "groups-" + UUID.randomUUID();
    AtomicBoolean fixed = new AtomicBoolean();
    // Refunds fail one way, orders another; an unprocessable event is refused by the handler.
    InboxHandler handler =
        (c, ev) -> {
          if (ev.type().equals("Poison")) {
            throw new UnprocessableEventException(DeadLetterReason.MALFORMED, "no amount", null);
          }
          if (!fixed.get()) {
            throw ev.type().equals("RefundIssued")
                ? new IllegalStateException("ledger down")
                : new IllegalArgumentException("no such account");
          }
          insertEffect(c, ev);
        };
    run(topic, "g", subscription, handler, settings(subscription, 1));
    Envelope refund1 = event("r1", "g-refund-1").toBuilder().type("RefundIssued").build();
    Envelope refund2 = event("r2", "g-refund-2").toBuilder().type("RefundIssued").build();
    Envelope order = event("o1", "g-order-1");
    Envelope poison = event("p1", "g-poison-1").toBuilder().type("Poison").build();
    broker.publisher().publishAll(topic, List.of(refund1, refund2, order, poison));
    DeadLetters letters = new DeadLetters(tx, dialect, subscription, handler, Clock.systemUTC());
    await().atMost(Duration.ofSeconds(30)).until(() -> letters.open(10).size() == 4);

    List<DeadLetterGroup> groups = letters.openGroups();
    assertThat(groups)
        .extracting(DeadLetterGroup::reason, DeadLetterGroup::errorClass, DeadLetterGroup::count)
        .containsExactlyInAnyOrder(
            tuple(DeadLetterReason.HANDLER_FAILED, "java.lang.IllegalStateException", 2L),
            tuple(DeadLetterReason.HANDLER_FAILED, "java.lang.IllegalArgumentException", 1L),
            tuple(
                DeadLetterReason.MALFORMED,
                "dev.postbox.runtime.api.UnprocessableEventException",
                1L));
    DeadLetterGroup refunds = groups.get(0); // the largest first
    assertThat(refunds.subscription()).isEqualTo(subscription);
    assertThat(refunds.sampleError()).contains("ledger down");
    assertThat(refunds.firstId()).isLessThan(refunds.lastId());
    assertThat(refunds.oldest()).isNotNull().isBeforeOrEqualTo(refunds.newest());

    // A third refund fails after the operator looked: acting "as seen" leaves it alone.
    Envelope refund3 = event("r3", "g-refund-3").toBuilder().type("RefundIssued").build();
    broker.publisher().publish(topic, refund3);
    await().atMost(Duration.ofSeconds(30)).until(() -> letters.open(10).size() == 5);

    fixed.set(true);
    ReplayResult replayed =
        letters.replayGroup(refunds.reason(), refunds.errorClass(), refunds.lastId());
    assertThat(replayed.replayed()).isEqualTo(2);
    assertThat(replayed.failed()).isZero();
    assertThat(effects(refund1.id())).isEqualTo(1);
    assertThat(effects(refund2.id())).isEqualTo(1);
    assertThat(effects(refund3.id())).as("joined after the look").isZero();
    assertThat(letters.open(10))
        .extracting(DeadLetter::eventId)
        .containsExactlyInAnyOrder(order.id(), poison.id(), refund3.id());

    DeadLetterGroup orders =
        groups.stream()
            .filter(g -> "java.lang.IllegalArgumentException".equals(g.errorClass()))
            .findFirst()
            .orElseThrow();
    assertThat(letters.discardGroup(orders.reason(), orders.errorClass(), orders.lastId()))
        .isEqualTo(1);
    assertThat(letters.discardGroup(orders.reason(), orders.errorClass(), 0))
        .as("nothing left in it")
        .isZero();
    assertThat(letters.open(10))
        .extracting(DeadLetter::eventId)
        .containsExactlyInAnyOrder(poison.id(), refund3.id());
    // The unprocessable one fails again on replay and stays open; 0 bounds nothing.
    assertThat(
            letters
                .replayGroup(
                    DeadLetterReason.MALFORMED,
                    "dev.postbox.runtime.api.UnprocessableEventException",
                    0)
                .failed())
        .isEqualTo(1);
    assertThat(
            letters
                .replayGroup(DeadLetterReason.HANDLER_FAILED, "java.lang.IllegalStateException", 0)
                .replayed())
        .isEqualTo(1);
    assertThat(letters.openGroups())
        .extracting(DeadLetterGroup::reason, DeadLetterGroup::count)
        .containsExactly(tuple(DeadLetterReason.MALFORMED, 1L));
    assertThat(effects(order.id())).as("discarded, never processed").isZero();
  }

  @Test
  void aQueuedEventAnEarlierVersionAcceptedButNoEnvelopeHoldsNowBecomesALetterAndItsKeyGoesOn() {
    // Deferred mode. An earlier version queued events with a tab in the subject, which the event
    // rules now refuse: once, claiming such a row threw, every claim met it first, and the
    // subscription stopped for good.
    org.junit.jupiter.api.Assumptions.assumeTrue(deferred(), "deferred mode only");
    String topic = topic(1);
    String subscription = "stale-" + UUID.randomUUID();
    String staleId = "stale-" + UUID.randomUUID();
    tx.inTransaction(
        c -> {
          try (PreparedStatement ps =
              c.prepareStatement(
                  "INSERT INTO postbox_inbox_pending (subscription, event_id, event_key,"
                      + " event_type, source, subject, content_type, event_time, headers, payload,"
                      + " metadata, attempts, next_attempt_at, head)"
                      + " VALUES (?, ?, 'k', 'OrderCaptured', 'urn:old', ?, NULL, ?, '{}', ?, '{}',"
                      + " 0, ?, ?)")) {
            ps.setString(1, subscription);
            ps.setString(2, staleId);
            ps.setString(3, "Order\t42");
            dialect.bind(ps, 4, Instant.now());
            ps.setBytes(5, "{}".getBytes(StandardCharsets.UTF_8));
            dialect.bind(ps, 6, Instant.now());
            ps.setBoolean(7, true);
            ps.executeUpdate();
          }
          return null;
        });
    run(topic, "g", subscription, (c, ev) -> insertEffect(c, ev), settings(subscription, 3));
    Envelope next = event("k", "after the stale one");
    broker.publisher().publish(topic, next);
    DeadLetters letters =
        new DeadLetters(tx, dialect, subscription, (c, ev) -> {}, Clock.systemUTC());
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> effects(next.id()) == 1 && letters.open(10).size() == 1);
    DeadLetter stale = letters.open(10).get(0);
    assertThat(stale.reason()).isEqualTo(DeadLetterReason.MALFORMED);
    assertThat(stale.error()).contains("queued before this version's event rules");
    assertThat(letters.get(stale.id()).orElseThrow().headers())
        .containsEntry("ce_id", staleId)
        .containsEntry("ce_subject", "Order\t42");
  }

  @Test
  void sequencedModeTakesACopyOfADeadLetteredEventAsADuplicateSoItsDiscardAppliesNothing() {
    org.junit.jupiter.api.Assumptions.assumeFalse(deferred(), "sequenced mode runs inline only");
    // Once, the copy was parked behind its own letter, and discarding the letter released the
    // copy: the event the operator gave up on took effect after all.
    String topic = topic(1);
    String subscription = "seq-copy-" + UUID.randomUUID();
    AtomicBoolean fixed = new AtomicBoolean();
    InboxHandler handler = failingUntil(fixed, new IllegalStateException("poison"));
    run(topic, "g", subscription, handler, settings(subscription, 1).withSequenced(true));
    DeadLetters letters =
        new DeadLetters(
            tx, dialect, subscription, handler, Clock.systemUTC(), Duration.ofDays(7), true);
    Envelope e = event("k", "doomed");
    broker.publisher().publish(topic, e);
    await().atMost(Duration.ofSeconds(30)).until(() -> letters.open(10).size() == 1);
    long head = letters.open(10).get(0).id();

    fixed.set(true); // the copy would take effect now, if it ran
    broker.publisher().publish(topic, e); // a redelivered copy
    InboxCounters counters = new InboxCounters(tx, dialect);
    await().atMost(Duration.ofSeconds(30)).until(() -> counters.duplicates(subscription) == 1);
    assertThat(letters.open(10)).extracting(DeadLetter::id).containsExactly(head);

    assertThat(letters.discard(head)).isTrue();
    assertThat(letters.open(10)).isEmpty();
    assertThat(effects(e.id())).as("the discarded event never took effect").isZero();
  }

  @Test
  void sequencedModeTakesACopyWithAnotherPayloadOfAParkedEventAsAConflictLetter() {
    org.junit.jupiter.api.Assumptions.assumeFalse(deferred(), "sequenced mode runs inline only");
    // Once, such a copy was parked too, and its replay, after the first copy's, was settled as
    // REPLAYED: its payload silently dropped.
    String topic = topic(1);
    String subscription = "seq-conflict-" + UUID.randomUUID();
    AtomicBoolean fixed = new AtomicBoolean();
    InboxHandler handler =
        (c, ev) -> {
          if (!fixed.get() && new String(ev.payload(), StandardCharsets.UTF_8).equals("poison")) {
            throw new IllegalStateException("poison");
          }
          insertEffect(c, ev);
        };
    run(topic, "g", subscription, handler, settings(subscription, 1).withSequenced(true));
    DeadLetters letters =
        new DeadLetters(
            tx, dialect, subscription, handler, Clock.systemUTC(), Duration.ofDays(7), true);
    Envelope poison = event("k", "poison");
    Envelope parked = event("k", "a");
    Envelope other = parked.toBuilder().payload("b").build(); // the same id, another payload
    broker.publisher().publishAll(topic, List.of(poison, parked));
    await().atMost(Duration.ofSeconds(30)).until(() -> letters.open(10).size() == 2);
    broker.publisher().publish(topic, other);
    await().atMost(Duration.ofSeconds(30)).until(() -> letters.open(10).size() == 3);
    assertThat(letters.open(10))
        .extracting(DeadLetter::eventId, DeadLetter::reason)
        .containsExactly(
            tuple(poison.id(), DeadLetterReason.HANDLER_FAILED),
            tuple(parked.id(), DeadLetterReason.PARKED),
            tuple(parked.id(), DeadLetterReason.CONFLICT));
    // what the health reading and the gauges show, however quiet the subscription is now
    Map<String, InboxHealth.OpenLetters> counts =
        tx.inTransaction(c -> new DeadLetterRepository(dialect).openLetterCounts(c));
    assertThat(counts).containsEntry(subscription, new InboxHealth.OpenLetters(2, 1, 1));

    fixed.set(true);
    assertThat(letters.replay(letters.open(10).get(0).id())).isTrue();
    assertThat(effects(poison.id())).isEqualTo(1);
    assertThat(effects(parked.id())).as("the parked event, released").isEqualTo(1);
    DeadLetter conflict = letters.open(10).get(0);
    assertThat(letters.open(10)).hasSize(1);
    assertThat(conflict.reason()).isEqualTo(DeadLetterReason.CONFLICT);
    assertThat(letters.get(conflict.id()).orElseThrow().payload()).isEqualTo(other.payload());
  }

  @Test
  void aReplayOfALetterWhoseEventWasProcessedWithAnotherPayloadMakesItAConflict() {
    // Once it was settled as REPLAYED, as if its payload had been applied.
    String topic = topic(1);
    String subscription = "replay-conflict-" + UUID.randomUUID();
    AtomicBoolean fixed = new AtomicBoolean();
    InboxHandler handler = failingUntil(fixed, new IllegalStateException("down"));
    run(topic, "g", subscription, handler, settings(subscription, 1));
    DeadLetters letters = new DeadLetters(tx, dialect, subscription, handler, Clock.systemUTC());
    Envelope first = event("k", "first");
    broker.publisher().publish(topic, first);
    await().atMost(Duration.ofSeconds(30)).until(() -> letters.open(10).size() == 1);
    long id = letters.open(10).get(0).id();
    fixed.set(true);
    broker.publisher().publish(topic, first.toBuilder().payload("second").build());
    await().atMost(Duration.ofSeconds(30)).until(() -> effects(first.id()) == 1);

    assertThatThrownBy(() -> letters.replay(id))
        .isInstanceOf(dev.postbox.runtime.api.NotReplayableException.class)
        .hasMessageContaining("became a CONFLICT");
    DeadLetter now = letters.get(id).orElseThrow();
    assertThat(now.status()).isEqualTo("OPEN");
    assertThat(now.reason()).isEqualTo(DeadLetterReason.CONFLICT);
    assertThat(effects(first.id())).isEqualTo(1);
  }

  @Test
  void sequencedModeNeverHandlesAParkedEventThatExpiredWhileParked() {
    // Released parked letters are replayed without an operator: once, one past its expiry ran.
    org.junit.jupiter.api.Assumptions.assumeFalse(deferred(), "sequenced mode runs inline only");
    String topic = topic(1);
    String subscription = "sequenced-expiry-" + UUID.randomUUID();
    String run = subscription.substring(17, 25) + ":";
    AtomicBoolean fixed = new AtomicBoolean();
    InboxHandler handler = poisonUntilFixed(fixed);
    run(topic, "g", subscription, handler, settings(subscription, 1).withSequenced(true));
    DeadLetters letters =
        new DeadLetters(
            tx, dialect, subscription, handler, Clock.systemUTC(), Duration.ofDays(7), true);
    Instant expiry = Instant.now().plusSeconds(2);
    Envelope a1 = event("a", run + "a1 poison");
    Envelope a2 =
        event("a", run + "a2 expires").toBuilder()
            .header(Envelope.EXPIRYTIME, expiry.toString())
            .build();
    Envelope a3 = event("a", run + "a3");
    broker.publisher().publishAll(topic, List.of(a1, a2, a3));
    await().atMost(Duration.ofSeconds(30)).until(() -> letters.open(10).size() == 3);
    assertThat(letters.open(10).get(1).reason()).isEqualTo(DeadLetterReason.PARKED);
    await().atMost(Duration.ofSeconds(10)).until(() -> Instant.now().isAfter(expiry));
    fixed.set(true);
    assertThat(letters.replay(letters.open(10).get(0).id())).isTrue();
    assertThat(notes(run)).containsExactly(run + "a1 poison", run + "a3");
    assertThat(letters.open(10))
        .singleElement()
        .satisfies(
            l -> {
              assertThat(l.eventId()).isEqualTo(a2.id());
              assertThat(l.reason()).isEqualTo(DeadLetterReason.EXPIRED);
              assertThat(l.error()).contains("expired at " + expiry, "while parked");
            });
  }

  @Test
  void sequencedModeParksTheQueuedEventsOfAKeyWhoseRetriedHeadIsDeadLetteredInTheirOrder() {
    org.junit.jupiter.api.Assumptions.assumeFalse(deferred(), "sequenced mode runs inline only");
    String topic = topic(1);
    String subscription = "seqretry-" + UUID.randomUUID();
    String run = subscription.substring(10, 18) + ":";
    AtomicBoolean fixed = new AtomicBoolean();
    InboxHandler handler = poisonUntilFixed(fixed);
    // Three attempts: the head waits in the queue, its key's later events queue behind it, and
    // the queue's worker dead-letters it after its third attempt.
    InboxSettings settings = settings(subscription, 3).withSequenced(true);
    run(topic, "g", subscription, handler, settings);
    DeadLetters letters =
        new DeadLetters(
            tx, dialect, subscription, handler, Clock.systemUTC(), Duration.ofDays(7), true);
    Envelope a1 = event("a", run + "a1 poison");
    Envelope a2 = event("a", run + "a2");
    Envelope a3 = event("a", run + "a3");
    broker.publisher().publishAll(topic, List.of(a1, a2, a3));
    await().atMost(Duration.ofSeconds(30)).until(() -> letters.open(10).size() == 3);
    Envelope a4 = event("a", run + "a4");
    broker.publisher().publish(topic, a4);
    await().atMost(Duration.ofSeconds(30)).until(() -> letters.open(10).size() == 4);
    List<DeadLetter> open = letters.open(10);
    assertThat(open)
        .extracting(DeadLetter::eventId, DeadLetter::reason)
        .as("the letters in the key's order, the queued ones right behind the head")
        .containsExactly(
            tuple(a1.id(), DeadLetterReason.HANDLER_FAILED),
            tuple(a2.id(), DeadLetterReason.PARKED),
            tuple(a3.id(), DeadLetterReason.PARKED),
            tuple(a4.id(), DeadLetterReason.PARKED));
    assertThat(open.get(0).attempts()).isEqualTo(3);
    assertThat(queued(subscription)).isEmpty();
    assertThat(notes(run)).isEmpty();
    fixed.set(true);
    assertThat(letters.replay(open.get(0).id())).isTrue();
    assertThat(notes(run)).containsExactly(run + "a1 poison", run + "a2", run + "a3", run + "a4");
  }

  @Test
  void sequencedModeParksAKeysLaterEventsBehindItsDeadLetterAndReplaysThemInOrder() {
    org.junit.jupiter.api.Assumptions.assumeFalse(deferred(), "sequenced mode runs inline only");
    String topic = topic(1);
    String subscription = "sequenced-" + UUID.randomUUID();
    String run = subscription.substring(10, 18) + ":";
    AtomicBoolean fixed = new AtomicBoolean();
    InboxHandler handler = poisonUntilFixed(fixed);
    InboxSettings settings = settings(subscription, 1).withSequenced(true);
    run(topic, "g", subscription, handler, settings);
    DeadLetters letters =
        new DeadLetters(
            tx, dialect, subscription, handler, Clock.systemUTC(), Duration.ofDays(7), true);

    Envelope a1 = event("a", run + "a1 poison");
    Envelope a2 = event("a", run + "a2");
    Envelope a3 = event("a", run + "a3");
    Envelope b1 = event("b", run + "b1");
    broker.publisher().publishAll(topic, List.of(a1, a2, a3, b1));
    await().atMost(Duration.ofSeconds(30)).until(() -> letters.open(10).size() == 3);
    await().atMost(Duration.ofSeconds(30)).until(() -> notes(run).equals(List.of(run + "b1")));
    List<DeadLetter> open = letters.open(10);
    assertThat(open)
        .extracting(DeadLetter::eventId, DeadLetter::reason)
        .containsExactly(
            tuple(a1.id(), DeadLetterReason.HANDLER_FAILED),
            tuple(a2.id(), DeadLetterReason.PARKED),
            tuple(a3.id(), DeadLetterReason.PARKED));
    assertThat(open.get(1).error()).contains("parked behind dead letter " + open.get(0).id());
    assertThat(inboxRows(subscription)).as("parked events are not recorded").isEqualTo(1);

    // A parked letter is not replayed out of turn.
    assertThatThrownBy(() -> letters.replay(open.get(1).id()))
        .isInstanceOf(dev.postbox.runtime.api.NotReplayableException.class)
        .hasMessageContaining("waits behind dead letter " + open.get(0).id());
    // A later event of the key is parked too; other keys go on, "A" as well as "b" (keys compare
    // exactly, on every database).
    Envelope a4 = event("a", run + "a4");
    Envelope b2 = event("b", run + "b2");
    Envelope upper = event("A", run + "A1");
    broker.publisher().publishAll(topic, List.of(a4, b2, upper));
    await().atMost(Duration.ofSeconds(30)).until(() -> letters.open(10).size() == 4);
    await().atMost(Duration.ofSeconds(30)).until(() -> notes(run).size() == 3);
    // A copy of an event already processed is a duplicate, not parked behind the key's letter.
    broker.publisher().publish(topic, b1.toBuilder().key("a").build());
    Envelope a4b = event("a", run + "a4b");
    broker.publisher().publish(topic, a4b);
    await().atMost(Duration.ofSeconds(30)).until(() -> letters.open(10).size() == 5);
    assertThat(letters.open(10)).extracting(DeadLetter::eventId).doesNotContain(b1.id());

    // Replaying the head after the fix releases the key: its parked events follow, in order.
    fixed.set(true);
    assertThat(letters.replay(open.get(0).id())).isTrue();
    assertThat(letters.open(10)).isEmpty();
    assertThat(notes(run))
        .containsExactly(
            run + "b1",
            run + "b2",
            run + "A1",
            run + "a1 poison",
            run + "a2",
            run + "a3",
            run + "a4",
            run + "a4b");
    // Nothing holds the key now: its next event is handled at once.
    Envelope a5 = event("a", run + "a5");
    broker.publisher().publish(topic, a5);
    await().atMost(Duration.ofSeconds(30)).until(() -> notes(run).size() == 9);
    assertThat(letters.open(10)).isEmpty();

    // Discarding a head releases its key the same way, and the discarded event has no effect.
    fixed.set(false);
    Envelope c1 = event("c", run + "c1 poison");
    Envelope c2 = event("c", run + "c2");
    broker.publisher().publishAll(topic, List.of(c1, c2));
    await().atMost(Duration.ofSeconds(30)).until(() -> letters.open(10).size() == 2);
    assertThat(letters.discard(letters.open(10).get(0).id())).isTrue();
    assertThat(letters.open(10)).isEmpty();
    assertThat(notes(run)).endsWith(run + "a5", run + "c2");
    assertThat(effects(c1.id())).isZero();

    // A parked event whose replay fails becomes the key's failed head, and holds the key.
    Envelope d1 = event("d", run + "d1 poison");
    Envelope d2 = event("d", run + "d2 poison");
    Envelope d3 = event("d", run + "d3");
    broker.publisher().publishAll(topic, List.of(d1, d2, d3));
    await().atMost(Duration.ofSeconds(30)).until(() -> letters.open(10).size() == 3);
    assertThat(letters.discard(letters.open(10).get(0).id())).isTrue();
    assertThat(letters.open(10))
        .extracting(DeadLetter::eventId, DeadLetter::reason)
        .containsExactly(
            tuple(d2.id(), DeadLetterReason.HANDLER_FAILED),
            tuple(d3.id(), DeadLetterReason.PARKED));
    assertThat(letters.openGroups())
        .extracting(DeadLetterGroup::errorClass)
        .contains("java.lang.IllegalStateException");

    // A release that never ran (a crash after the head's replay committed) is done by the sweep.
    fixed.set(true);
    long head = letters.open(10).get(0).id();
    tx.inTransaction(
        c -> {
          try (PreparedStatement ps =
              c.prepareStatement(
                  "UPDATE postbox_dead_letter SET status = 'DISCARDED' WHERE id = ?")) {
            ps.setLong(1, head);
            return ps.executeUpdate();
          }
        });
    assertThat(letters.open(10)).extracting(DeadLetter::eventId).containsExactly(d3.id());
    assertThat(letters.sweepParked()).isEqualTo(1);
    assertThat(letters.open(10)).isEmpty();
    assertThat(notes(run)).endsWith(run + "c2", run + "d3");
  }

  @Test
  void eachPoisonClassIsDeadLetteredWithItsReasonAndTheNextEventIsProcessed() throws Exception {
    String topic = topic(1);
    String subscription = "poison-" + UUID.randomUUID();
    run(
        topic,
        "g",
        subscription,
        (c, ev) -> insertEffect(c, ev),
        settings(subscription, 3).withTypes(Set.of("OrderCaptured")).withMaxPayloadBytes(100));
    try (KafkaProducer<byte[], byte[]> raw =
        new KafkaProducer<>(
            Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, KAFKA.bootstrapServers(),
                ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class,
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class))) {
      raw.send(new ProducerRecord<>(topic, "not an event".getBytes(StandardCharsets.UTF_8))).get();
      ProducerRecord<byte[], byte[]> noId =
          new ProducerRecord<>(topic, "{}".getBytes(StandardCharsets.UTF_8));
      noId.headers().add("ce_specversion", "1.0".getBytes(StandardCharsets.UTF_8));
      noId.headers().add("ce_source", "urn:x".getBytes(StandardCharsets.UTF_8));
      noId.headers().add("ce_type", "OrderCaptured".getBytes(StandardCharsets.UTF_8));
      noId.headers().add("ce_time", "2026-01-01T00:00:00Z".getBytes(StandardCharsets.UTF_8));
      raw.send(noId).get();
    }
    broker
        .publisher()
        .publish(topic, Envelope.builder().source("urn:x").type("Unheard").payload("{}").build());
    broker
        .publisher()
        .publish(
            topic,
            Envelope.builder()
                .source("urn:x")
                .type("OrderCaptured")
                .payload("x".repeat(500))
                .build());
    Envelope good = event("k", "good");
    broker.publisher().publish(topic, good);

    DeadLetters letters =
        new DeadLetters(tx, dialect, subscription, (c, ev) -> {}, Clock.systemUTC());
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> effects(good.id()) == 1 && letters.open(10).size() == 4);
    assertThat(letters.open(10))
        .extracting(DeadLetter::reason)
        .containsExactly(
            DeadLetterReason.MALFORMED,
            DeadLetterReason.MISSING_ID,
            DeadLetterReason.UNKNOWN_TYPE,
            DeadLetterReason.OVERSIZED);
    DeadLetter malformed = letters.get(letters.open(10).get(0).id()).orElseThrow();
    assertThat(new String(malformed.payload(), StandardCharsets.UTF_8)).isEqualTo("not an event");
    assertThat(malformed.replayable()).isFalse();
    assertThat(malformed.metadata()).containsKeys("partition", "offset");
  }

  @Test
  void poisonThatOnceCouldNotBeStoredEndsAsAStoredDeadLetterAndTheNextEventIsProcessed()
      throws Exception {
    // Each of these once failed the dead-letter insert itself, and was then retried for ever with
    // nothing logged: a time no database stores, a NUL character (PostgreSQL), and raw headers
    // larger than the dead-letter columns.
    String topic = topic(1);
    String subscription = "hostile-" + UUID.randomUUID();
    run(
        topic,
        "g",
        subscription,
        (c, ev) -> insertEffect(c, ev),
        settings(subscription, 3).withTypes(Set.of("OrderCaptured")));
    try (KafkaProducer<byte[], byte[]> raw =
        new KafkaProducer<>(
            Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, KAFKA.bootstrapServers(),
                ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class,
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class))) {
      raw.send(cloudEvent(topic, "far-future", "Unheard", "+1000000000-01-01T00:00:00Z")).get();
      raw.send(cloudEvent(topic, "nul\u0000id", "OrderCaptured", "2026-01-01T00:00:00Z")).get();
      ProducerRecord<byte[], byte[]> bloated =
          new ProducerRecord<>(topic, "not an event".getBytes(StandardCharsets.UTF_8));
      for (int i = 0; i < 40; i++) {
        bloated.headers().add("x-big-" + i, "v".repeat(2_000).getBytes(StandardCharsets.UTF_8));
      }
      raw.send(bloated).get();
    }
    Envelope good = event("k", "after-the-hostile-ones");
    broker.publisher().publish(topic, good);

    DeadLetters letters =
        new DeadLetters(tx, dialect, subscription, (c, ev) -> {}, Clock.systemUTC());
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> effects(good.id()) == 1 && letters.open(10).size() == 3);
    List<DeadLetter> open = letters.open(10);
    // A time outside the years 1 to 9999 breaks the event rules Outbox.record applies too: the
    // event is malformed, whatever its type.
    assertThat(open)
        .extracting(DeadLetter::reason)
        .containsExactly(
            DeadLetterReason.MALFORMED, DeadLetterReason.MALFORMED, DeadLetterReason.MALFORMED);
    DeadLetter future = letters.get(open.get(0).id()).orElseThrow();
    assertThat(future.eventTime()).isNull();
    assertThat(future.error()).contains("envelope time +1000000000-01-01T00:00:00Z is outside");
    assertThat(future.headers()).containsEntry("ce_time", "+1000000000-01-01T00:00:00Z");
    assertThat(future.replayable()).as("a malformed letter is never replayed").isFalse();
    assertThat(open.get(1).error()).contains("envelope id contains the control character U+0000");
    DeadLetter bloatedLetter = letters.get(open.get(2).id()).orElseThrow();
    assertThat(bloatedLetter.headers()).containsKey("postbox.omitted");
    assertThat(bloatedLetter.metadata()).containsKeys("postbox.payload.sha256", "partition");
  }

  private static ProducerRecord<byte[], byte[]> cloudEvent(
      String topic, String id, String type, String time) {
    ProducerRecord<byte[], byte[]> r =
        new ProducerRecord<>(topic, "{}".getBytes(StandardCharsets.UTF_8));
    r.headers().add("ce_specversion", "1.0".getBytes(StandardCharsets.UTF_8));
    r.headers().add("ce_id", id.getBytes(StandardCharsets.UTF_8));
    r.headers().add("ce_source", "urn:x".getBytes(StandardCharsets.UTF_8));
    r.headers().add("ce_type", type.getBytes(StandardCharsets.UTF_8));
    r.headers().add("ce_time", time.getBytes(StandardCharsets.UTF_8));
    return r;
  }

  @Test
  void idsThatDifferOnlyInCaseAreTwoEvents() {
    // MariaDB's default collation once made them one id: the second was skipped or a CONFLICT.
    String topic = topic(1);
    String subscription = "case-" + UUID.randomUUID();
    run(topic, "g", subscription, (c, ev) -> insertEffect(c, ev), settings(subscription, 3));
    String id = "Order-" + UUID.randomUUID();
    Envelope upper =
        event("k", "one").toBuilder().id(id.toUpperCase(java.util.Locale.ROOT)).build();
    Envelope lower =
        event("k", "two").toBuilder().id(id.toLowerCase(java.util.Locale.ROOT)).build();
    broker.publisher().publishAll(topic, List.of(upper, lower));
    // it_effect itself uses the server's collation, so count all rows rather than by id
    await().atMost(Duration.ofSeconds(30)).until(() -> effects(null) == 2);
    DeadLetters letters =
        new DeadLetters(tx, dialect, subscription, (c, ev) -> {}, Clock.systemUTC());
    assertThat(letters.open(10)).isEmpty();
  }

  @Test
  void theSameIdWithAnotherPayloadIsAConflictAndHasNoSecondEffect() {
    String topic = topic(1);
    String subscription = "conflict-" + UUID.randomUUID();
    run(topic, "g", subscription, (c, ev) -> insertEffect(c, ev), settings(subscription, 3));
    Envelope original = event("k", "original");
    Envelope impostor = original.toBuilder().payload("tampered").build();
    broker.publisher().publish(topic, original);
    broker.publisher().publish(topic, impostor);
    DeadLetters letters =
        new DeadLetters(tx, dialect, subscription, (c, ev) -> {}, Clock.systemUTC());
    await().atMost(Duration.ofSeconds(30)).until(() -> letters.open(10).size() == 1);
    assertThat(letters.open(10).get(0).reason()).isEqualTo(DeadLetterReason.CONFLICT);
    long id = letters.open(10).get(0).id();
    assertThat(new String(letters.get(id).orElseThrow().payload(), StandardCharsets.UTF_8))
        .isEqualTo("tampered");
    assertThat(effects(original.id())).isEqualTo(1);

    // A CONFLICT is never replayed by accident: not alone, not in bulk, not after the window.
    assertThatThrownBy(() -> letters.replay(id))
        .isInstanceOf(NotReplayableException.class)
        .hasMessageContaining("CONFLICT");
    assertThat(letters.replayAll(null).replayed()).isZero();
    assertThat(letters.open(10)).hasSize(1);
    DeadLetters later =
        new DeadLetters(
            tx,
            dialect,
            subscription,
            (c, ev) -> insertEffect(c, ev),
            Clock.offset(Clock.systemUTC(), Duration.ofDays(8)),
            Duration.ofDays(7));
    assertThatThrownBy(() -> later.replay(id, false)).isInstanceOf(NotReplayableException.class);
    // Forced, within the window: the id is known as processed, so nothing runs.
    DeadLetters forced =
        new DeadLetters(
            tx,
            dialect,
            subscription,
            (c, ev) -> insertEffect(c, ev),
            Clock.systemUTC(),
            Duration.ofDays(7));
    assertThat(forced.replay(id, true)).isFalse();
    assertThat(effects(original.id())).isEqualTo(1);
    assertThat(letters.open(10)).isEmpty();
  }

  @Test
  void aLetterOlderThanTheDedupWindowIsReplayedOnlyWhenForced() {
    String topic = topic(1);
    String subscription = "window-" + UUID.randomUUID();
    AtomicBoolean fixed = new AtomicBoolean();
    InboxHandler handler = failingUntil(fixed, new IllegalStateException("down"));
    run(topic, "g", subscription, handler, settings(subscription, 1));
    Envelope e = event("w", "late");
    broker.publisher().publish(topic, e);
    DeadLetters now = new DeadLetters(tx, dialect, subscription, handler, Clock.systemUTC());
    await().atMost(Duration.ofSeconds(30)).until(() -> now.open(10).size() == 1);
    long id = now.open(10).get(0).id();
    fixed.set(true);
    DeadLetters eightDaysOn =
        new DeadLetters(
            tx,
            dialect,
            subscription,
            handler,
            Clock.offset(Clock.systemUTC(), Duration.ofDays(8)),
            Duration.ofDays(7));
    assertThatThrownBy(() -> eightDaysOn.replay(id))
        .isInstanceOf(NotReplayableException.class)
        .hasMessageContaining("dedup window");
    assertThat(eightDaysOn.replayAll(null).failed()).isEqualTo(1);
    assertThat(effects(e.id())).isZero();
    assertThat(eightDaysOn.replay(id, true)).isTrue();
    assertThat(effects(e.id())).isEqualTo(1);
  }

  @Test
  void aFailingEventInABatchIsIsolatedAndTheRestCommit() {
    String topic = topic(1);
    String subscription = "batch-" + UUID.randomUUID();
    List<Envelope> batch = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      batch.add(event("k" + i, i == 7 ? "poisonous" : "fine-" + i));
    }
    broker.publisher().publishAll(topic, batch);
    run(
        topic,
        "g",
        subscription,
        (c, ev) -> {
          if (new String(ev.payload(), StandardCharsets.UTF_8).equals("poisonous")) {
            throw new IllegalStateException("cannot handle");
          }
          insertEffect(c, ev);
        },
        settings(subscription, 2));
    DeadLetters letters =
        new DeadLetters(tx, dialect, subscription, (c, ev) -> {}, Clock.systemUTC());
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> effects(null) == 19 && letters.open(10).size() == 1);
    assertThat(letters.open(10).get(0).eventId()).isEqualTo(batch.get(7).id());
  }

  @Test
  void fourParallelWorkersKeepEachKeysOrderThroughFailures() {
    String topic = topic(2);
    String subscription = "ordered-" + UUID.randomUUID();
    List<Envelope> events = new ArrayList<>();
    for (int i = 0; i < 2_000; i++) {
      events.add(event("key-" + (i % 20), Integer.toString(i / 20)));
    }
    broker.publisher().publishAll(topic, events);
    Random random = new Random(5);
    Set<String> failedOnce = java.util.concurrent.ConcurrentHashMap.newKeySet();
    run(
        topic,
        "g",
        subscription,
        (c, ev) -> {
          // One event in fifty fails once: its key must wait for it; the other keys go on.
          if (random.nextInt(50) == 0 && failedOnce.add(ev.id())) {
            throw new IllegalStateException("transient");
          }
          try (PreparedStatement ps =
              c.prepareStatement("INSERT INTO it_effect (event_id, note) VALUES (?, ?)")) {
            ps.setString(1, ev.id());
            ps.setString(2, ev.key() + ":" + new String(ev.payload(), StandardCharsets.UTF_8));
            ps.executeUpdate();
          }
        },
        settings(subscription, 5).withWorkers(4));
    // About 40 failures, each holding its key and, on Kafka, rewinding its partition: this path is
    // slow (~70 s for the 2,000 events on a loaded 2-core machine); what is asserted is the order.
    await()
        .atMost(Duration.ofMinutes(3))
        .untilAsserted(() -> assertThat(effects(null)).as("effects").isEqualTo(2_000));
    assertThat(failedOnce).as("some events failed and were retried").isNotEmpty();
    Map<String, List<Integer>> order = new java.util.HashMap<>();
    tx.inTransaction(
        c -> {
          // seq is an identity: the order in which the effects were written.
          try (PreparedStatement ps =
                  c.prepareStatement("SELECT note FROM it_effect ORDER BY seq");
              ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
              String[] keySeq = rs.getString(1).split(":");
              order
                  .computeIfAbsent(keySeq[0], k -> new ArrayList<>())
                  .add(Integer.parseInt(keySeq[1]));
            }
          }
          return null;
        });
    assertThat(order).hasSize(20);
    order.forEach((key, seqs) -> assertThat(seqs).as("order of %s", key).isSorted().hasSize(100));
  }

  @Test
  void aFailedEventAndItsKeysLaterEventsWaitInTheDatabaseAndKeepTheirOrderThroughARestart()
      throws Exception {
    String topic = topic(1);
    String subscription = "held-" + UUID.randomUUID();
    AtomicBoolean fixed = new AtomicBoolean();
    Envelope head = event("k", "0");
    List<Envelope> keyed = List.of(head, event("k", "1"), event("k", "2"), event("k", "3"));
    Envelope other = event("other", "x");
    InboxHandler handler =
        (c, ev) -> {
          if (!fixed.get() && ev.id().equals(head.id())) {
            throw new IllegalStateException("the ledger is locked");
          }
          try (PreparedStatement ps =
              c.prepareStatement("INSERT INTO it_effect (event_id, note) VALUES (?, ?)")) {
            ps.setString(1, ev.id());
            ps.setString(2, ev.key() + ":" + new String(ev.payload(), StandardCharsets.UTF_8));
            ps.executeUpdate();
          }
        };
    // Slow retries: the head is still failing when the process stops.
    InboxSettings settings =
        InboxSettings.of(subscription)
            .withRetry(new RetryPolicy(50, Duration.ofSeconds(1), Duration.ofSeconds(2), 0));
    List<Envelope> all = new ArrayList<>(keyed);
    all.add(other);
    broker.publisher().publishAll(topic, all);
    run(topic, "g", subscription, handler, settings);

    // The other key passes; the failed head and the key's later events wait in the database, in
    // arrival order, acknowledged: the broker holds none of them back for a redelivery.
    await().atMost(Duration.ofSeconds(30)).until(() -> effects(other.id()) == 1);
    await()
        .atMost(Duration.ofSeconds(30))
        .untilAsserted(
            () -> assertThat(queued(subscription)).containsExactlyElementsOf(ids(keyed)));
    assertThat(notes("k:")).isEmpty();

    closeConsumers(); // the process stops: nothing it remembered survives
    fixed.set(true);
    run(topic, "g", subscription, handler, settings); // the next process, the same group

    await()
        .atMost(Duration.ofSeconds(30))
        .untilAsserted(() -> assertThat(notes("k:")).containsExactly("k:0", "k:1", "k:2", "k:3"));
    await()
        .during(Duration.ofSeconds(1))
        .atMost(Duration.ofSeconds(10))
        .until(() -> effects(null) == 5 && queued(subscription).isEmpty());
  }

  @Test
  void aDeliveryTheBrokerCountsAsDeliveredManyTimesStillGetsItsRetries() {
    // Restarts, closed sessions and lapsed visibility raise a broker's delivery count without a
    // handler failure (and some adapters read a header a producer can set): the count must not
    // turn a first, transient failure into a dead letter.
    String topic = topic(1);
    String subscription = "counted-" + UUID.randomUUID();
    Envelope e = event("k", "counted");
    AtomicInteger calls = new AtomicInteger();
    InboxHandler flaky =
        (c, ev) -> {
          if (calls.incrementAndGet() == 1) {
            throw new IllegalStateException("transient");
          }
          insertEffect(c, ev);
        };
    run(topic, "g", subscription, flaky, settings(subscription, 3), 50);
    broker.publisher().publish(topic, e);
    await().atMost(Duration.ofSeconds(30)).until(() -> effects(e.id()) == 1);
    assertThat(calls.get()).isEqualTo(2);
    assertThat(new DeadLetters(tx, dialect, subscription, flaky, Clock.systemUTC()).openCount())
        .isZero();
  }

  @Test
  void aHandlerStackOverflowIsAnAttemptAndTheQueueKeepsWorking() {
    String topic = topic(1);
    String subscription = "overflow-" + UUID.randomUUID();
    Envelope head = event("k", "0");
    List<Envelope> keyed = List.of(head, event("k", "1"), event("k", "2"));
    AtomicInteger overflows = new AtomicInteger();
    InboxHandler handler =
        (c, ev) -> {
          if (ev.id().equals(head.id())) {
            int call = overflows.incrementAndGet();
            if (call == 1) {
              throw new IllegalStateException("transient"); // queued: the worker retries it
            }
            if (call <= 3) {
              throw new StackOverflowError("a deeply nested payload"); // in the queue's worker
            }
          }
          try (PreparedStatement ps =
              c.prepareStatement("INSERT INTO it_effect (event_id, note) VALUES (?, ?)")) {
            ps.setString(1, ev.id());
            ps.setString(2, ev.key() + ":" + new String(ev.payload(), StandardCharsets.UTF_8));
            ps.executeUpdate();
          }
        };
    run(topic, "g", subscription, handler, settings(subscription, 10));
    broker.publisher().publishAll(topic, keyed);
    await()
        .atMost(Duration.ofSeconds(30))
        .untilAsserted(() -> assertThat(notes("k:")).containsExactly("k:0", "k:1", "k:2"));
    assertThat(overflows.get()).isEqualTo(4);
  }

  @Test
  void aFailingEventWithTheLongestMultiByteKeyIsRetriedOrLetteredNeverAStall() {
    // 1,000 CJK characters: 3,000 bytes, over PostgreSQL's btree row limit for the queue's key
    // index (SQLState 54000). Wherever the database takes the key, the event is retried; where
    // it cannot, it becomes a letter. The consumer never pauses on it.
    String topic = topic(1);
    String subscription = "longkey-" + UUID.randomUUID();
    String key = "日".repeat(1_000);
    Envelope e = event(key, "long");
    Envelope next = event("short", "next");
    AtomicInteger calls = new AtomicInteger();
    InboxHandler flaky =
        (c, ev) -> {
          if (ev.id().equals(e.id()) && calls.incrementAndGet() == 1) {
            throw new IllegalStateException("transient");
          }
          insertEffect(c, ev);
        };
    run(topic, "g", subscription, flaky, settings(subscription, 3));
    broker.publisher().publishAll(topic, List.of(e, next));
    DeadLetters letters = new DeadLetters(tx, dialect, subscription, flaky, Clock.systemUTC());
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> effects(next.id()) == 1 && effects(e.id()) + letters.openCount() == 1);
  }

  /** The event ids in the inbox's queue, in their order. */
  private List<String> queued(String subscription) {
    return tx.inTransaction(
        c -> {
          List<String> out = new ArrayList<>();
          try (PreparedStatement ps =
              c.prepareStatement(
                  "SELECT event_id FROM postbox_inbox_pending WHERE subscription = ? ORDER BY seq")) {
            ps.setString(1, subscription);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                out.add(rs.getString(1));
              }
            }
          }
          return out;
        });
  }

  private static List<String> ids(List<Envelope> events) {
    return events.stream().map(Envelope::id).toList();
  }

  @Test
  void aKeysNextEventQueuedWhileItsHeadFinishesIsPromotedByTheLaterReCheck() throws Exception {
    // Both modes: inline, a worker finishing a retried head races a receiver queueing the key's
    // next event behind it, on two connections, exactly as here.
    String subscription = "race-" + UUID.randomUUID();
    PendingEventRepository pending = new PendingEventRepository(dialect);
    Envelope first = event("k", "first");
    Envelope second = event("k", "second");
    java.time.Instant now = java.time.Instant.now();
    tx.inTransaction(
        c -> {
          pending.enqueueAll(c, subscription, List.of(first), List.of(Map.of()), now);
          return null;
        });
    try (java.sql.Connection worker = db.dataSource().getConnection();
        java.sql.Connection receiver = db.dataSource().getConnection()) {
      worker.setAutoCommit(false);
      receiver.setAutoCommit(false);
      worker.setTransactionIsolation(java.sql.Connection.TRANSACTION_READ_COMMITTED);
      receiver.setTransactionIsolation(java.sql.Connection.TRANSACTION_READ_COMMITTED);
      var head = pending.claim(worker, subscription, now.plusSeconds(1), 10).ready();
      assertThat(head).extracting(p -> p.event().id()).containsExactly(first.id());
      // The worker finishes the head and finds no next event: the receiver has not committed.
      assertThat(pending.processedAll(worker, subscription, head, now)).containsExactly("k");
      // The receiver still sees the head (uncommitted delete), so queues behind it.
      assertThat(
              pending.enqueueAll(receiver, subscription, List.of(second), List.of(Map.of()), now))
          .containsExactly("k");
      receiver.commit();
      worker.commit();
    }
    assertThat(claimable(pending, subscription)).as("stranded without a re-check").isEmpty();
    tx.inTransaction(c -> pending.promote(c, subscription, "k"));
    assertThat(claimable(pending, subscription)).containsExactly(second.id());

    // The sweep finds the same loss after a crash skipped the re-check.
    tx.inTransaction(
        c -> {
          try (PreparedStatement ps =
              c.prepareStatement(
                  "UPDATE postbox_inbox_pending SET head = ? WHERE subscription = ?")) {
            ps.setBoolean(1, false);
            ps.setString(2, subscription);
            ps.executeUpdate();
          }
          return null;
        });
    assertThat(claimable(pending, subscription)).isEmpty();
    int restored = tx.inTransaction(c -> pending.sweep(c, subscription));
    assertThat(restored).isEqualTo(1);
    assertThat(claimable(pending, subscription)).containsExactly(second.id());
  }

  private List<String> claimable(PendingEventRepository pending, String subscription) {
    return tx.inTransaction(
        c ->
            pending
                .claim(c, subscription, java.time.Instant.now().plusSeconds(1), 10)
                .ready()
                .stream()
                .map(p -> p.event().id())
                .toList());
  }

  @Test
  void aBatchIsRecordedInOneGoAndTellsNewEventsFromDuplicates() {
    // The batch path must work on every database, not fall back to one transaction per event:
    // MariaDB's driver reports no per-row counts for a JDBC batch, which once made every batch
    // fail over to the slow path without a word.
    String subscription = "record-all-" + UUID.randomUUID();
    InboxRepository repo = new InboxRepository(dialect);
    java.time.Instant now = java.time.Instant.now();
    Envelope seen = event("k1", "seen");
    Envelope fresh = event("k2", "fresh");
    Envelope twice = event("k3", "twice");
    tx.inTransaction(c -> repo.record(c, subscription, seen, "f", now));
    List<Envelope> batch = new ArrayList<>(List.of(twice, seen, fresh, twice));
    for (int i = 0; i < 1_500; i++) { // more rows than one multi-row statement takes
      batch.add(event("bulk", "bulk-" + i));
    }
    boolean[] isNew =
        tx.inTransaction(
            c ->
                repo.recordAll(
                    c,
                    subscription,
                    batch,
                    java.util.Collections.nCopies(batch.size(), "f"),
                    !deferred(),
                    now));
    assertThat(java.util.Arrays.copyOf(isNew, 4)).containsExactly(true, false, true, false);
    for (int i = 4; i < isNew.length; i++) {
      assertThat(isNew[i]).as("bulk event %d", i).isTrue();
    }
    assertThat(inboxRows(subscription)).isEqualTo(3 + 1_500);
  }

  @Test
  void retentionDeletesRowsPastTheWindowInBoundedBatches() {
    org.junit.jupiter.api.Assumptions.assumeFalse(
        datePartitioned(), "date partitions drop buckets instead: DatePartitionsIT");
    String subscription = "retention-" + UUID.randomUUID();
    InboxRepository repo = new InboxRepository(dialect);
    java.time.Instant longAgo = java.time.Instant.now().minus(Duration.ofDays(30));
    tx.inTransaction(
        c -> {
          for (int i = 0; i < 25; i++) {
            repo.record(c, subscription, event("k", "old-" + i), "f", longAgo);
          }
          repo.record(c, subscription, event("k", "recent"), "f", java.time.Instant.now());
          return null;
        });
    Retention retention = Retention.inbox(tx, dialect, Clock.systemUTC());
    java.time.Instant cutoff = java.time.Instant.now().minus(Retention.DEFAULT_DEDUP_WINDOW);
    assertThat(retention.purgeBatch(cutoff, 10)).isEqualTo(10);
    assertThat(retention.purgeBatch(cutoff, 10)).isEqualTo(10);
    assertThat(retention.purge(Retention.DEFAULT_DEDUP_WINDOW, 10)).isEqualTo(5);
    assertThat(inboxRows(subscription)).as("the recent row stays").isEqualTo(1);
  }

  @Test
  void withTheFrontCopiesOfAProcessedEventAreAcknowledgedWithoutAskingTheDatabase() {
    org.junit.jupiter.api.Assumptions.assumeFalse(deferred(), "the front serves inline mode");
    String topic = topic(1);
    String subscription = "front-" + UUID.randomUUID();
    AtomicInteger statements = new AtomicInteger();
    Transactions counting = countingStatements(statements);
    run(
        topic,
        "g",
        (c, ev) -> insertEffect(c, ev),
        settings(subscription, 3).withFront(Duration.ofMinutes(10), 10_000),
        counting);
    Envelope e = event("k", "front");
    broker.publisher().publish(topic, e);
    await().atMost(Duration.ofSeconds(30)).until(() -> effects(e.id()) == 1);
    InboxCounters counters = new InboxCounters(tx, dialect);
    long before = counters.duplicates(subscription);
    statements.set(0);
    broker.publisher().publishAll(topic, java.util.Collections.nCopies(200, e));
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> counters.duplicates(subscription) >= before + 200);
    assertThat(effects(e.id())).isEqualTo(1);
    // Without the front each copy costs its inbox insert and a fingerprint lookup (400 statements
    // or more); with it, a poll's copies cost one statement, their durable count.
    assertThat(statements.get()).isLessThan(100);
  }

  @Test
  void withTheFrontAnEventWhoseTransactionRolledBackIsProcessedWhenItComesBack() {
    String topic = topic(1);
    String subscription = "front-rollback-" + UUID.randomUUID();
    AtomicInteger calls = new AtomicInteger();
    run(
        topic,
        "g",
        subscription,
        (c, ev) -> {
          insertEffect(c, ev);
          if (calls.incrementAndGet() == 1) {
            throw new IllegalStateException("fails after its write: the write rolls back");
          }
        },
        settings(subscription, 5).withFront(Duration.ofMinutes(10), 10_000));
    Envelope e = event("k", "rolled-back-once");
    broker.publisher().publish(topic, e);
    await().atMost(Duration.ofSeconds(30)).until(() -> effects(e.id()) == 1);
    assertThat(calls.get()).isEqualTo(2);
    // and a copy after the commit is a duplicate, not a third call
    broker.publisher().publish(topic, e);
    InboxCounters counters = new InboxCounters(tx, dialect);
    await().atMost(Duration.ofSeconds(30)).until(() -> counters.duplicates(subscription) == 1);
    assertThat(calls.get()).isEqualTo(2);
    assertThat(effects(e.id())).isEqualTo(1);
  }

  @Test
  void withTheFrontACopyWithAnotherPayloadIsStillAConflict() {
    String topic = topic(1);
    String subscription = "front-conflict-" + UUID.randomUUID();
    run(
        topic,
        "g",
        subscription,
        (c, ev) -> insertEffect(c, ev),
        settings(subscription, 3).withFront(Duration.ofMinutes(10), 10_000));
    Envelope original = event("k", "original");
    broker.publisher().publish(topic, original);
    await().atMost(Duration.ofSeconds(30)).until(() -> effects(original.id()) == 1);
    broker.publisher().publish(topic, original.toBuilder().payload("tampered").build());
    DeadLetters letters =
        new DeadLetters(tx, dialect, subscription, (c, ev) -> {}, Clock.systemUTC());
    await().atMost(Duration.ofSeconds(30)).until(() -> letters.open(10).size() == 1);
    assertThat(letters.open(10).get(0).reason()).isEqualTo(DeadLetterReason.CONFLICT);
    assertThat(effects(original.id())).isEqualTo(1);
  }

  /** The contract's transactions, counting the statements prepared in them. */
  private Transactions countingStatements(AtomicInteger statements) {
    return new Transactions() {
      @Override
      public <T> T inTransaction(Work<T> work) {
        return tx.inTransaction(
            c ->
                work.run(
                    (java.sql.Connection)
                        java.lang.reflect.Proxy.newProxyInstance(
                            getClass().getClassLoader(),
                            new Class<?>[] {java.sql.Connection.class},
                            (proxy, method, args) -> {
                              if (method.getName().startsWith("prepare")
                                  || method.getName().equals("createStatement")) {
                                statements.incrementAndGet();
                              }
                              try {
                                return method.invoke(c, args);
                              } catch (java.lang.reflect.InvocationTargetException ex) {
                                throw ex.getCause();
                              }
                            })));
      }
    };
  }

  private String identity() {
    return switch (kind()) {
      case POSTGRESQL -> "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY";
      case MARIADB -> "BIGINT AUTO_INCREMENT PRIMARY KEY";
      case H2 -> "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY";
    };
  }

  // ---- helpers ----

  private InboxSettings settings(String subscription, int maxAttempts) {
    return InboxSettings.of(subscription)
        .withRetry(new RetryPolicy(maxAttempts, Duration.ofMillis(50), Duration.ofMillis(200), 0));
  }

  /** A consumer loop on a thread of its own, until the test ends. */
  private void run(
      String topic,
      String group,
      String subscription,
      InboxHandler handler,
      InboxSettings settings) {
    run(topic, group, handler, settings, tx);
  }

  /** As above, every delivery reporting the broker's delivery count {@code attempt}. */
  private void run(
      String topic,
      String group,
      String subscription,
      InboxHandler handler,
      InboxSettings settings,
      int attempt) {
    deliveryCount = attempt;
    run(topic, group, handler, settings, tx);
  }

  /** The delivery count the next {@link #run} reports for every delivery; 0: the broker's. */
  private int deliveryCount;

  /** As above, the inbox on {@code tx} (e.g. one that counts statements). */
  private void run(
      String topic, String group, InboxHandler handler, InboxSettings settings, Transactions tx) {
    int counted = deliveryCount;
    deliveryCount = 0;
    // The Kafka group is the test's own: every IT class shares one broker, and a group shared
    // between tests couples each test's rebalance to the consumers of the ones before it.
    Consumer consumer =
        broker.subscribe(new Subscription(topic, group + "." + settings.subscription(), 5_000));
    ExecutorService lanes = Executors.newFixedThreadPool(settings.workers());
    if (deferred()) {
      settings = settings.withDeferred(true);
    }
    // The queue's workers run in both modes: inline, they run the retries from the database.
    DeferredInbox workers =
        new DeferredInbox(
            this.tx, dialect, settings, handler, Clock.systemUTC(), InboxListener.NONE);
    ExecutorService workerThreads = Executors.newFixedThreadPool(settings.workers());
    workers.start(workerThreads);
    closeAfter.add(
        () -> {
          workers.close();
          workerThreads.shutdown();
        });
    InboxListener listener =
        new InboxListener() {
          @Override
          public void received(String subscription, Envelope event) {
            workers.wake();
          }
        };
    InboxProcessor inbox =
        new InboxProcessor(tx, dialect, settings, handler, Clock.systemUTC(), listener, lanes);
    ExecutorService loop = Executors.newSingleThreadExecutor();
    loop.execute(
        () -> {
          while (!stop.get()) {
            List<dev.postbox.spi.Delivery> batch = consumer.poll(500, Duration.ofMillis(100));
            inbox.process(
                counted == 0 ? batch : batch.stream().map(d -> counted(d, counted)).toList());
          }
        });
    closeAfter.add(
        () -> {
          loop.shutdown();
          loop.awaitTermination(30, java.util.concurrent.TimeUnit.SECONDS);
          lanes.shutdown();
          consumer.close();
        });
  }

  /**
   * A handler that writes its payload as the effect's note; a payload with "poison" fails until
   * {@code fixed} is set.
   */
  private static InboxHandler poisonUntilFixed(AtomicBoolean fixed) {
    return (c, ev) -> {
      String text = new String(ev.payload(), StandardCharsets.UTF_8);
      if (text.contains("poison") && !fixed.get()) {
        throw new IllegalStateException("cannot charge " + text);
      }
      try (PreparedStatement ps =
          c.prepareStatement("INSERT INTO it_effect (event_id, note) VALUES (?, ?)")) {
        ps.setString(1, ev.id());
        ps.setString(2, text);
        ps.executeUpdate();
      }
    };
  }

  /** The delivery, reporting {@code attempt} as the broker's delivery count. */
  private static dev.postbox.spi.Delivery counted(dev.postbox.spi.Delivery d, int attempt) {
    return new dev.postbox.spi.Delivery() {
      @Override
      public Envelope envelope() {
        return d.envelope();
      }

      @Override
      public int attempt() {
        return attempt;
      }

      @Override
      public Map<String, String> metadata() {
        return d.metadata();
      }

      @Override
      public void ack() {
        d.ack();
      }

      @Override
      public void nack(Duration delay) {
        d.nack(delay);
      }
    };
  }

  /** A handler that throws the failure until {@code fixed} is set, then writes the effect. */
  private static InboxHandler failingUntil(AtomicBoolean fixed, RuntimeException failure) {
    return (c, ev) -> {
      if (!fixed.get()) {
        throw failure;
      }
      insertEffect(c, ev);
    };
  }

  private static void insertEffect(java.sql.Connection c, Envelope e) throws java.sql.SQLException {
    try (PreparedStatement ps =
        c.prepareStatement("INSERT INTO it_effect (event_id, note) VALUES (?, ?)")) {
      ps.setString(1, e.id());
      ps.setString(2, "charged");
      ps.executeUpdate();
    }
  }

  /** The effects' notes that start with a prefix, in the order they were written. */
  private List<String> notes(String prefix) {
    return tx.inTransaction(
        c -> {
          List<String> out = new ArrayList<>();
          try (PreparedStatement ps =
              c.prepareStatement("SELECT note FROM it_effect WHERE note LIKE ? ORDER BY seq")) {
            ps.setString(1, prefix + "%");
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                out.add(rs.getString(1));
              }
            }
          }
          return out;
        });
  }

  private long effects(String eventId) {
    return count(
        eventId == null
            ? "SELECT COUNT(*) FROM it_effect"
            : "SELECT COUNT(*) FROM it_effect WHERE event_id = ?",
        eventId);
  }

  private long distinctEffects() {
    return count("SELECT COUNT(DISTINCT event_id) FROM it_effect", null);
  }

  private long inboxRows(String subscription) {
    return count("SELECT COUNT(*) FROM postbox_inbox WHERE subscription = ?", subscription);
  }

  private long count(String sql, String param) {
    return tx.inTransaction(
        c -> {
          try (PreparedStatement ps = c.prepareStatement(sql)) {
            if (param != null) {
              ps.setString(1, param);
            }
            try (ResultSet rs = ps.executeQuery()) {
              rs.next();
              return rs.getLong(1);
            }
          }
        });
  }

  private static String topic(int partitions) {
    String name = "inbox-" + UUID.randomUUID();
    KAFKA.createTopic(name, partitions);
    return name;
  }

  private static Envelope event(String key, String payload) {
    return Envelope.builder()
        .source("urn:inbox-it")
        .type("OrderCaptured")
        .key(key)
        .payload(payload)
        .build();
  }
}
