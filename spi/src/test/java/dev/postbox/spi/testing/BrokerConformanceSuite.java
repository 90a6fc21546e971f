package dev.postbox.spi.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.postbox.spi.BatchPublishException;
import dev.postbox.spi.Broker;
import dev.postbox.spi.BrokerException;
import dev.postbox.spi.Consumer;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.PermanentBrokerException;
import dev.postbox.spi.RetriableBrokerException;
import dev.postbox.spi.Subscription;
import java.nio.charset.StandardCharsets;
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
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The broker conformance kit: what every adapter must do, checked against its real broker.
 *
 * <p>An adapter's test is a short subclass that supplies the broker: {@link #openBroker()}, {@link
 * #openUnreachableBroker()} and, where destinations must be created first (Kafka topics with
 * partitions, SQS queues), {@link #newDestination()}. The test methods are {@code final}, so no
 * adapter can weaken them; checks of a capability that a broker does not claim are skipped, not
 * passed. Broker-specific behaviour belongs in the adapter's own extra tests.
 *
 * <p>Each test uses a fresh destination and consumer group, so tests never see each other's
 * messages even on a shared broker. Consumers are always subscribed before the test publishes, so
 * brokers that only deliver to existing subscriptions conform too.
 */
public abstract class BrokerConformanceSuite {

  private Broker broker;
  private final List<Consumer> openConsumers = new ArrayList<>();
  private final String source = "urn:postbox:conformance";

  /** A broker connected to the real broker under test, opened once per test and closed after it. */
  protected abstract Broker openBroker();

  /**
   * A broker configured against an address where nothing listens, with its publish timeout at most
   * {@link #unreachableBound()}. Opening it may already fail with a retriable error.
   */
  protected abstract Broker openUnreachableBroker();

  /** A fresh destination's name. Override to create it with what the broker needs. */
  protected String newDestination() {
    return "conformance-" + UUID.randomUUID();
  }

  /** A destination name for the unreachable broker; override where names have rules (.fifo). */
  protected String unreachableDestination() {
    return "unreachable-" + UUID.randomUUID();
  }

  /** How long publishing to an unreachable broker may take before it fails. */
  protected Duration unreachableBound() {
    return Duration.ofSeconds(15);
  }

  /** The longest wait for a delivery that must arrive. */
  protected Duration deliveryTimeout() {
    return Duration.ofSeconds(30);
  }

  /**
   * How long to watch for a delivery that must <em>not</em> arrive. It must be longer than the
   * broker would take to redeliver it if the promise were broken (e.g. an SQS visibility timeout).
   */
  protected Duration quietPeriod() {
    return Duration.ofSeconds(2);
  }

  @BeforeEach
  final void openBrokerUnderTest() {
    broker = openBroker();
  }

  @AfterEach
  final void closeBrokerUnderTest() {
    openConsumers.forEach(Consumer::close);
    openConsumers.clear();
    if (broker != null) {
      broker.close();
    }
  }

  /** The broker of the running test, for subclasses' extra tests. */
  protected final Broker broker() {
    return broker;
  }

  // 1
  @Test
  public final void roundTripIsByteExact() {
    String destination = newDestination();
    Consumer consumer = subscribe(destination, group());
    byte[] allBytes = new byte[512];
    for (int i = 0; i < allBytes.length; i++) {
      allBytes[i] = (byte) i;
    }
    Map<String, String> headers = new LinkedHashMap<>();
    headers.put(Envelope.TRACEPARENT, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    headers.put(Envelope.TRACESTATE, "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE");
    headers.put("tenant", "ünïcødé ✓ and spaces, commas; = signs");
    headers.put("empty", "");
    Envelope full =
        Envelope.builder()
            .source(source)
            .type("RoundTrip")
            .subject("order/42")
            .key("key-1")
            .time(Instant.parse("2026-11-30T12:34:56.123456Z"))
            .dataContentType("application/octet-stream")
            .headers(headers)
            .payload(allBytes)
            .build();
    Envelope minimal =
        Envelope.builder().source(source).type("Minimal").time(Instant.now()).build();

    broker.publisher().publish(destination, full);
    broker.publisher().publish(destination, minimal);

    Map<String, Envelope> received = new HashMap<>();
    for (Delivery d : receive(consumer, 2, deliveryTimeout())) {
      received.put(d.envelope().id(), d.envelope());
      d.ack();
    }
    assertThat(received.get(full.id())).isEqualTo(full);
    assertThat(received.get(full.id()).payload()).containsExactly(allBytes);
    assertThat(received.get(full.id()).headers()).containsExactlyInAnyOrderEntriesOf(headers);
    assertThat(received.get(minimal.id())).isEqualTo(minimal);
  }

  // 2
  @Test
  public final void ackStopsRedelivery() {
    String destination = newDestination();
    String group = group();
    Consumer first = subscribe(destination, group);
    Envelope acked = envelope("k", "acked");
    broker.publisher().publish(destination, acked);
    Delivery d = receive(first, 1, deliveryTimeout()).get(0);
    assertThat(d.envelope().id()).isEqualTo(acked.id());
    d.ack();
    first.close();

    Consumer second = subscribe(destination, group);
    Envelope marker = envelope("other", "marker");
    broker.publisher().publish(destination, marker);
    List<String> seen = new ArrayList<>();
    receiveUntil(second, deliveryTimeout(), ds -> ids(ds).contains(marker.id()), seen);
    watch(second, quietPeriod(), seen);
    assertThat(seen).as("ids seen by the second consumer").doesNotContain(acked.id());
  }

  // 3
  @Test
  public final void unackedDeliveryReturnsAfterConsumerCloses() {
    String destination = newDestination();
    String group = group();
    Consumer first = subscribe(destination, group);
    Envelope unacked = envelope("k", "unacked");
    broker.publisher().publish(destination, unacked);
    assertThat(ids(receive(first, 1, deliveryTimeout()))).containsExactly(unacked.id());
    first.close();

    Consumer second = subscribe(destination, group);
    Delivery again =
        receiveUntil(second, deliveryTimeout(), ds -> ids(ds).contains(unacked.id()), null).stream()
            .filter(x -> x.envelope().id().equals(unacked.id()))
            .findFirst()
            .orElseThrow();
    assertThat(again.envelope()).isEqualTo(unacked);
    again.ack();
  }

  // 4
  @Test
  public final void nackWithDelayRedeliversNoSooner() {
    assumeTrue(broker.capabilities().delayedRedelivery(), "broker has no delayed redelivery");
    String destination = newDestination();
    Consumer consumer = subscribe(destination, group());
    Envelope e = envelope("k", "delayed");
    broker.publisher().publish(destination, e);
    Delivery first = receive(consumer, 1, deliveryTimeout()).get(0);
    Duration delay = Duration.ofSeconds(2);

    long nackedAt = System.nanoTime();
    first.nack(delay);
    List<Delivery> again =
        receiveUntil(consumer, deliveryTimeout().plus(delay), ds -> ids(ds).contains(e.id()), null);
    long elapsed = System.nanoTime() - nackedAt;

    assertThat(Duration.ofNanos(elapsed)).as("time to redelivery").isGreaterThanOrEqualTo(delay);
    again.forEach(Delivery::ack);
  }

  // 5
  @Test
  public final void sameKeyArrivesInPublishOrder() {
    assumeTrue(broker.capabilities().perKeyOrdering(), "broker has no per-key ordering");
    String destination = newDestination();
    Consumer consumer = subscribe(destination, group());
    List<Envelope> sent = new ArrayList<>();
    for (int i = 0; i < 30; i++) {
      Envelope e = envelope("key-" + (i % 3), "seq-" + i);
      sent.add(e);
      broker.publisher().publish(destination, e);
    }
    Map<String, List<String>> receivedByKey = new HashMap<>();
    int count = 0;
    long deadline = System.nanoTime() + deliveryTimeout().toNanos();
    while (count < sent.size() && System.nanoTime() < deadline) {
      for (Delivery d : consumer.poll(10, Duration.ofMillis(200))) {
        receivedByKey
            .computeIfAbsent(d.envelope().key(), k -> new ArrayList<>())
            .add(d.envelope().id());
        d.ack();
        count++;
      }
    }
    for (String key : List.of("key-0", "key-1", "key-2")) {
      List<String> expected =
          sent.stream().filter(e -> e.key().equals(key)).map(Envelope::id).toList();
      assertThat(receivedByKey.get(key)).as("order of %s", key).containsExactlyElementsOf(expected);
    }
  }

  // 6
  @Test
  public final void batchPublishDeliversEveryEnvelope() {
    String destination = newDestination();
    Consumer consumer = subscribe(destination, group());
    List<Envelope> batch = new ArrayList<>();
    for (int i = 0; i < 25; i++) {
      batch.add(envelope("key-" + (i % 5), "batch-" + i));
    }
    broker.publisher().publishAll(destination, batch);
    broker.publisher().publishAll(destination, List.of()); // an empty batch is fine

    Map<String, Envelope> received = new HashMap<>();
    for (Delivery d : receive(consumer, batch.size(), deliveryTimeout())) {
      received.put(d.envelope().id(), d.envelope());
      d.ack();
    }
    assertThat(received.values()).containsExactlyInAnyOrderElementsOf(batch);
  }

  // 7
  @Test
  public final void twoConsumersInOneGroupShareTheWork() {
    String destination = newDestination();
    String group = group();
    Consumer a = subscribe(destination, group);
    Consumer b = subscribe(destination, group);

    // Warm up until both members receive something, so the group is settled (Kafka rebalances
    // as members join) before the real check begins.
    Set<String> warmA = new HashSet<>();
    Set<String> warmB = new HashSet<>();
    long deadline = System.nanoTime() + deliveryTimeout().toNanos();
    int n = 0;
    while ((warmA.isEmpty() || warmB.isEmpty()) && System.nanoTime() < deadline) {
      // Two per round, one poll each, alternating who goes first: neither consumer can take
      // everything, and both keep polling (Kafka members rejoin a rebalance only inside poll).
      broker.publisher().publish(destination, envelope("warm-" + n, "warm-" + n++));
      broker.publisher().publish(destination, envelope("warm-" + n, "warm-" + n++));
      boolean aFirst = n % 4 == 2;
      warmUpPoll(aFirst ? a : b, aFirst ? warmA : warmB);
      warmUpPoll(aFirst ? b : a, aFirst ? warmB : warmA);
    }
    assertThat(warmA).as("warm-up deliveries to consumer a").isNotEmpty();
    assertThat(warmB).as("warm-up deliveries to consumer b").isNotEmpty();

    Set<String> sent = new HashSet<>();
    for (int i = 0; i < 40; i++) {
      Envelope e = envelope("share-" + i, "share-" + i);
      sent.add(e.id());
      broker.publisher().publish(destination, e);
    }
    List<Delivery> heldA = new ArrayList<>();
    List<Delivery> heldB = new ArrayList<>();
    Set<String> union = new HashSet<>();
    deadline = System.nanoTime() + deliveryTimeout().toNanos();
    while (!union.containsAll(sent) && System.nanoTime() < deadline) {
      for (Delivery d : a.poll(5, Duration.ofMillis(100))) {
        (sent.contains(d.envelope().id()) ? heldA : new ArrayList<Delivery>()).add(d);
        union.add(d.envelope().id());
      }
      for (Delivery d : b.poll(5, Duration.ofMillis(100))) {
        (sent.contains(d.envelope().id()) ? heldB : new ArrayList<Delivery>()).add(d);
        union.add(d.envelope().id());
      }
    }
    Set<String> idsA = new HashSet<>(ids(heldA));
    Set<String> idsB = new HashSet<>(ids(heldB));
    assertThat(union).as("every envelope reached the group").containsAll(sent);
    assertThat(idsA).as("consumer a did some of the work").isNotEmpty();
    assertThat(idsB).as("consumer b did some of the work").isNotEmpty();
    assertThat(idsA)
        .as("no unacked delivery reached both consumers")
        .doesNotContainAnyElementsOf(idsB);
    assertThat(heldA.size() + heldB.size())
        .as("no delivery twice while unacked")
        .isEqualTo(sent.size());
    heldA.forEach(Delivery::ack);
    heldB.forEach(Delivery::ack);
  }

  private static void warmUpPoll(Consumer consumer, Set<String> seen) {
    for (Delivery d : consumer.poll(1, Duration.ofMillis(100))) {
      seen.add(d.envelope().id());
      d.ack();
    }
  }

  // 8
  @Test
  public final void outOfOrderAckNeverLosesAnUnackedDelivery() {
    String destination = newDestination();
    String group = group();
    Consumer first = subscribe(destination, group);
    List<Envelope> sent = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      Envelope e = envelope("same-key", "ooo-" + i);
      sent.add(e);
      broker.publisher().publish(destination, e);
    }
    // Take what the broker hands out (a message-group broker may hand out only the first).
    List<Delivery> got = receiveUntilQuiet(first, sent.size());
    assertThat(got).isNotEmpty();
    Delivery withheld = got.get(0);
    for (Delivery d : got.subList(1, got.size())) {
      d.ack();
    }
    first.close();

    Consumer second = subscribe(destination, group);
    String lostId = withheld.envelope().id();
    List<Delivery> again =
        receiveUntil(second, deliveryTimeout(), ds -> ids(ds).contains(lostId), null);
    assertThat(ids(again)).as("the unacked delivery came back").contains(lostId);
    again.forEach(Delivery::ack);
  }

  // 9
  @Test
  public final void oversizedMessageIsRefusedPermanently() {
    String destination = newDestination();
    Consumer consumer = subscribe(destination, group());
    int limit = broker.capabilities().maxMessageBytes();
    Envelope big =
        Envelope.builder().source(source).type("Big").key("k").payload(new byte[limit + 1]).build();
    Envelope small = envelope("small", "small");

    assertThatThrownBy(() -> broker.publisher().publish(destination, big))
        .isInstanceOf(PermanentBrokerException.class);

    BatchPublishException batchFailure = null;
    try {
      broker.publisher().publishAll(destination, List.of(small, big));
    } catch (BatchPublishException e) {
      batchFailure = e;
    }
    assertThat(batchFailure).as("a batch with an oversized envelope fails").isNotNull();
    assertThat(batchFailure.failures()).containsOnlyKeys(1);
    assertThat(batchFailure.failures().get(1)).isInstanceOf(PermanentBrokerException.class);
    assertThat(batchFailure.isRetriable()).isFalse();
    assertThat(batchFailure.succeeded()).containsExactly(0);

    List<Delivery> delivered = receiveUntilQuiet(consumer, 1);
    assertThat(ids(delivered)).containsExactly(small.id());
    delivered.forEach(Delivery::ack);
  }

  // 10
  @Test
  public final void unreachableBrokerFailsRetriablyInBoundedTime() {
    Duration bound = unreachableBound();
    long started = System.nanoTime();
    Throwable thrown =
        assertTimeoutPreemptively(
            bound.multipliedBy(2).plusSeconds(2),
            () -> {
              try (Broker unreachable = openUnreachableBroker()) {
                unreachable.publisher().publish(unreachableDestination(), envelope("k", "lost"));
                return null;
              } catch (BrokerException e) {
                return e;
              }
            },
            "publishing to an unreachable broker must fail, not hang");
    Duration took = Duration.ofNanos(System.nanoTime() - started);
    assertThat(thrown)
        .as("publish to an unreachable broker")
        .isInstanceOf(RetriableBrokerException.class);
    assertThat(took).as("time to fail").isLessThanOrEqualTo(bound.plusSeconds(5));
  }

  // 10b
  @Test
  public final void pingAnswersWhenReachableAndFailsRetriablyInBoundedTimeWhenNot() {
    Duration bound = unreachableBound();
    try {
      broker().ping(Duration.ofSeconds(10));
    } catch (UnsupportedOperationException cannotTell) {
      org.junit.jupiter.api.Assumptions.abort("the adapter cannot check connectivity");
    }
    long started = System.nanoTime();
    Throwable thrown =
        assertTimeoutPreemptively(
            bound.multipliedBy(2).plusSeconds(2),
            () -> {
              try (Broker unreachable = openUnreachableBroker()) {
                unreachable.ping(bound);
                return null;
              } catch (BrokerException e) {
                return e;
              }
            },
            "pinging an unreachable broker must fail, not hang");
    assertThat(thrown).isInstanceOf(RetriableBrokerException.class);
    assertThat(Duration.ofNanos(System.nanoTime() - started))
        .isLessThanOrEqualTo(bound.plusSeconds(5));
  }

  // 11
  @Test
  public final void attemptCountGrowsOnRedelivery() {
    String destination = newDestination();
    Consumer consumer = subscribe(destination, group());
    Envelope e = envelope("k", "attempts");
    broker.publisher().publish(destination, e);
    List<Integer> attempts = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      Delivery d =
          receiveUntil(consumer, deliveryTimeout(), ds -> ids(ds).contains(e.id()), null).get(0);
      attempts.add(d.attempt());
      if (i < 2) {
        d.nack(Duration.ZERO);
      } else {
        d.ack();
      }
    }
    assertThat(attempts).containsExactly(1, 2, 3);
  }

  // 12
  @Test
  public final void pollNeverExceedsMaxInFlight() {
    String destination = newDestination();
    Consumer consumer = track(broker.subscribe(new Subscription(destination, group(), 3)));
    for (int i = 0; i < 6; i++) {
      broker.publisher().publish(destination, envelope("k" + i, "bounded-" + i));
    }
    List<Delivery> held = receiveUntilQuiet(consumer, 6);
    assertThat(held).as("unsettled deliveries held at once").hasSize(3);

    held.forEach(Delivery::ack);
    List<Delivery> rest = receiveUntilQuiet(consumer, 3);
    assertThat(rest).as("deliveries after settling").hasSize(3);
    assertThat(ids(rest)).doesNotContainAnyElementsOf(ids(held));
    rest.forEach(Delivery::ack);
  }

  // 13
  @Test
  public final void closeIsIdempotentAndFinal() {
    String destination = newDestination();
    Consumer consumer = subscribe(destination, group());
    consumer.close();
    consumer.close();
    assertThatThrownBy(() -> consumer.poll(1, Duration.ZERO))
        .isInstanceOf(IllegalStateException.class);
    broker.close();
    broker.close();
    assertThatThrownBy(() -> broker.publisher().publish(destination, envelope("k", "late")))
        .isInstanceOf(IllegalStateException.class);
  }

  // 14
  @Test
  public final void payloadsAtTheLimitArriveWholeWhenSeveralComeInOnePoll() {
    String destination = newDestination();
    Consumer consumer = subscribe(destination, group());
    int size = Math.min(broker.capabilities().maxMessageBytes(), 2 * 1024 * 1024);
    Map<String, byte[]> sent = new LinkedHashMap<>();
    List<Envelope> batch = new ArrayList<>();
    for (int n = 0; n < 3; n++) {
      byte[] payload = new byte[size];
      for (int i = 0; i < size; i++) {
        payload[i] = (byte) (i * 31 + n * 7 + (i >> 8));
      }
      Envelope e =
          Envelope.builder()
              .source(source)
              .type("Large")
              .key("large-" + n)
              .payload(payload)
              .build();
      sent.put(e.id(), payload);
      batch.add(e);
    }
    broker.publisher().publishAll(destination, batch);
    // Read as the inbox does: a poll of several, the payloads only after the poll returned.
    List<Delivery> got = receive(consumer, 3, deliveryTimeout());
    for (Delivery d : got) {
      Envelope e = d.envelope();
      assertThat(e.payload())
          .as("the payload of %s (%d bytes) arrived whole", e.id(), size)
          .isEqualTo(sent.get(e.id()));
      d.ack();
    }
  }

  // ---- helpers for subclasses' extra tests too ----

  /** A new consumer group name. */
  protected final String group() {
    return "group-" + UUID.randomUUID();
  }

  /** Opens a consumer that is closed after the test. */
  protected final Consumer subscribe(String destination, String group) {
    return track(broker.subscribe(Subscription.of(destination, group)));
  }

  /** Registers a consumer to be closed after the test. */
  protected final Consumer track(Consumer consumer) {
    openConsumers.add(consumer);
    return consumer;
  }

  /** An envelope with the given key and a UTF-8 payload. */
  protected final Envelope envelope(String key, String payload) {
    return Envelope.builder()
        .source(source)
        .type("ConformanceEvent")
        .key(key)
        .dataContentType("text/plain")
        .payload(payload.getBytes(StandardCharsets.UTF_8))
        .build();
  }

  /** Polls until {@code count} deliveries arrived; fails if they do not arrive in time. */
  protected final List<Delivery> receive(Consumer consumer, int count, Duration timeout) {
    List<Delivery> got = new ArrayList<>();
    long deadline = System.nanoTime() + timeout.toNanos();
    while (got.size() < count && System.nanoTime() < deadline) {
      got.addAll(consumer.poll(count - got.size(), Duration.ofMillis(200)));
    }
    if (got.size() < count) {
      fail("expected " + count + " deliveries within " + timeout + ", got " + got.size());
    }
    return got;
  }

  /**
   * Polls until what arrived satisfies {@code done}; deliveries that arrive on the way are acked
   * unless they are part of the answer. Fails on timeout.
   */
  protected final List<Delivery> receiveUntil(
      Consumer consumer, Duration timeout, Predicate<List<Delivery>> done, List<String> seen) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() < deadline) {
      List<Delivery> batch = consumer.poll(10, Duration.ofMillis(200));
      if (seen != null) {
        seen.addAll(ids(batch));
      }
      if (done.test(batch)) {
        return batch;
      }
      batch.forEach(Delivery::ack);
    }
    return fail("the expected delivery did not arrive within " + timeout);
  }

  /** Polls for {@code period} and records every id seen, acking each delivery. */
  protected final void watch(Consumer consumer, Duration period, List<String> seen) {
    long deadline = System.nanoTime() + period.toNanos();
    while (System.nanoTime() < deadline) {
      List<Delivery> batch = consumer.poll(10, Duration.ofMillis(100));
      seen.addAll(ids(batch));
      batch.forEach(Delivery::ack);
    }
  }

  /**
   * Polls until {@code max} deliveries arrived, or nothing more came for {@link #quietPeriod()}
   * after the first; does not settle them. Fails if nothing arrives within the delivery timeout.
   */
  protected final List<Delivery> receiveUntilQuiet(Consumer consumer, int max) {
    List<Delivery> got = new ArrayList<>();
    long deadline = System.nanoTime() + deliveryTimeout().toNanos();
    while (got.isEmpty() && System.nanoTime() < deadline) {
      got.addAll(consumer.poll(max, Duration.ofMillis(200)));
    }
    if (got.isEmpty()) {
      fail("no delivery within " + deliveryTimeout());
    }
    long quietUntil = System.nanoTime() + quietPeriod().toNanos();
    while (got.size() < max && System.nanoTime() < quietUntil) {
      List<Delivery> more = consumer.poll(max - got.size(), Duration.ofMillis(100));
      if (!more.isEmpty()) {
        got.addAll(more);
        quietUntil = System.nanoTime() + quietPeriod().toNanos();
      }
    }
    return got;
  }

  /** The ids of the deliveries, in order. */
  protected static List<String> ids(List<Delivery> deliveries) {
    return deliveries.stream().map(d -> d.envelope().id()).toList();
  }
}
