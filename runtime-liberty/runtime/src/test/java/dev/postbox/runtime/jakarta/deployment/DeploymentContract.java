package dev.postbox.runtime.jakarta.deployment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.postbox.runtime.api.DeadLetter;
import dev.postbox.runtime.api.DeadLetterReason;
import dev.postbox.runtime.api.InboxOperations;
import dev.postbox.runtime.api.InboxSubscription;
import dev.postbox.runtime.api.OutboxOperations;
import dev.postbox.runtime.jakarta.deployment.app.Ledger;
import dev.postbox.runtime.jakarta.deployment.app.Orders;
import dev.postbox.spi.Broker;
import dev.postbox.spi.Envelope;
import jakarta.inject.Inject;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import org.awaitility.core.ConditionFactory;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.arquillian.junit5.ArquillianExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * What every micro-deployment must show, run inside Liberty: a small application ({@code app}: an
 * order placed with {@code Outbox.record} in a {@code @Transactional} method, a {@code @Handles}
 * handler writing through JPA) with the runtime jar and one adapter. The whole path, outbox to
 * broker to inbox to handler; a rolled-back order that never leaves; a republished copy skipped;
 * poison stored as a dead letter with its reason. Each subclass differs only in its
 * {@code @Deployment}: the adapter's jars, the data source and the config.
 *
 * <p>The server's JVM runs in UTC+14 (src/test/liberty/arquillian/jvm.options), so a time that
 * depended on the machine's zone would be hours off.
 */
@ExtendWith(ArquillianExtension.class)
public abstract class DeploymentContract {

  private static final Duration WAIT = Duration.ofSeconds(60);

  @Inject Orders orders;

  @Inject Ledger ledger;

  @Inject Broker broker;

  @Inject InboxOperations inbox;

  @Inject OutboxOperations outbox;

  @Inject
  @ConfigProperty(name = "deployment.topic")
  String topic;

  @Test
  public final void aCommittedOrderIsChargedOnceAndARolledBackOneNeverLeaves() {
    String rolledBack = "rb-" + UUID.randomUUID();
    String kept = "ok-" + UUID.randomUUID();

    assertThatThrownBy(() -> orders.place(rolledBack, 100, true))
        .hasMessageContaining("rolled back on purpose");
    String eventId = orders.place(kept, 250, false);

    eventually().until(() -> ledger.chargesForEvent(eventId) == 1);
    eventually().until(() -> outbox.lag().pending() == 0);
    assertThat(ledger.orders(rolledBack)).as("the rolled-back order row").isZero();
    assertThat(ledger.outboxRowsFor(rolledBack)).as("the rolled-back order's event row").isZero();
    assertThat(ledger.outboxRowsFor(kept)).isEqualTo(1);
    assertThat(ledger.chargesForOrder(rolledBack))
        .as("the rolled-back order's event, recorded before it, never reached the broker")
        .isZero();
    assertThat(ledger.chargesForOrder(kept)).isEqualTo(1);
    assertThat(charges().counts().processed()).isPositive();
  }

  @Test
  public final void aRepublishedCopyOfAHandledEventIsSkipped() {
    Envelope event = order("copy-" + UUID.randomUUID(), "{\"amountCents\":700}");
    long duplicatesBefore = charges().counts().duplicates();

    broker.publisher().publishAll(topic, List.of(event));
    eventually().until(() -> ledger.chargesForEvent(event.id()) == 1);
    broker.publisher().publishAll(topic, List.of(event)); // the same event id, a second time
    eventually().until(() -> charges().counts().duplicates() > duplicatesBefore);

    assertThat(ledger.chargesForEvent(event.id())).as("charged once").isEqualTo(1);
  }

  @Test
  public final void aPoisonEventIsStoredAsADeadLetterWithItsReason() {
    Envelope poison = order("poison-" + UUID.randomUUID(), "not an order at all");
    Instant sent = Instant.now();

    broker.publisher().publishAll(topic, List.of(poison));
    DeadLetter letter =
        eventually()
            .until(
                () ->
                    charges().deadLetters().open(500).stream()
                        .filter(d -> d.eventId().equals(poison.id()))
                        .findFirst(),
                Optional::isPresent)
            .orElseThrow();

    assertThat(letter.reason()).isEqualTo(DeadLetterReason.MALFORMED);
    assertThat(letter.error()).contains("not an order");
    assertThat(letter.createdAt())
        .as("stored at the real instant, whatever the JVM's time zone")
        .isBetween(sent.minusSeconds(60), Instant.now().plusSeconds(60));
    assertThat(charges().deadLetters().get(letter.id()).orElseThrow().payload())
        .asString()
        .isEqualTo("not an order at all");
    assertThat(ledger.chargesForEvent(poison.id())).isZero();
  }

  /**
   * Awaitility polling on the test's own thread: a container thread, with the transaction context
   * JPA needs (Awaitility's own poller thread has none).
   */
  private static ConditionFactory eventually() {
    return await().atMost(WAIT).pollInSameThread();
  }

  private InboxSubscription charges() {
    return inbox.subscriptions().stream()
        .filter(s -> s.destination().equals(topic))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no subscription on " + topic));
  }

  private static Envelope order(String orderId, String payload) {
    return Envelope.builder()
        .source("urn:postbox:deployment")
        .type("OrderPlaced")
        .key(orderId)
        .payload(payload)
        .build();
  }
}
