package dev.postbox.runtime.inbox;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A key whose event failed waits for it: its later events are sent back to come after it. */
class KeyHoldsTest {

  private static final class Recorded implements Delivery {
    final Envelope envelope;
    final List<Duration> nacks = new ArrayList<>();
    int acks;

    Recorded(String id, String key) {
      envelope = Envelope.builder().id(id).source("/t").type("T").key(key).payload("{}").build();
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
      acks++;
    }

    @Override
    public void nack(Duration delay) {
      nacks.add(delay);
    }
  }

  private static Item item(Recorded d) {
    return new Item(d, d.envelope, false);
  }

  /** The holds' clock (nanoseconds): time passes only when a test moves it. */
  private final java.util.concurrent.atomic.AtomicLong clock =
      new java.util.concurrent.atomic.AtomicLong();

  private final KeyHolds holds = new KeyHolds(Duration.ofSeconds(2), clock::get);

  private void pass(Duration d) {
    clock.addAndGet(d.toNanos());
  }

  /** The event of key k fails and is sent back for 100 ms: its key is held behind it. */
  private void failsAndHoldsItsKey(String id) {
    Item failed = item(new Recorded(id, "k"));
    failed.delivery.nack(Duration.ofMillis(100));
    holds.update(List.of(failed));
  }

  @Test
  void withoutAFailureNothingIsHeld() {
    Recorded a = new Recorded("a", "k");
    List<Item> lane = List.of(item(a));
    assertThat(holds.holdBack(lane)).isSameAs(lane);
  }

  @Test
  void aFailedEventHoldsItsKeyAndItsFollowersComeBackAfterItInOrder() {
    Recorded failed = new Recorded("e1", "k");
    Item failedItem = item(failed);
    failedItem.delivery.nack(Duration.ofMillis(500));
    holds.update(List.of(failedItem));
    assertThat(holds.isHeadOfHold(failedItem)).isTrue();

    Recorded second = new Recorded("e2", "k");
    Recorded third = new Recorded("e3", "k");
    Recorded other = new Recorded("x1", "other");
    List<Item> free = holds.holdBack(List.of(item(second), item(third), item(other)));

    assertThat(free).extracting(i -> i.envelope.id()).containsExactly("x1");
    assertThat(second.nacks).hasSize(1);
    assertThat(third.nacks).hasSize(1);
    assertThat(second.nacks.get(0)).isGreaterThan(Duration.ofMillis(400));
    assertThat(third.nacks.get(0)).isGreaterThan(second.nacks.get(0));
    assertThat(other.nacks).isEmpty();
  }

  @Test
  void theHeldEventPassesAndItsAckEndsTheHold() {
    Recorded failed = new Recorded("e1", "k");
    Item first = item(failed);
    first.delivery.nack(Duration.ofMillis(100));
    holds.update(List.of(first));

    Recorded back = new Recorded("e1", "k"); // the failed event, redelivered
    Recorded follower = new Recorded("e2", "k");
    Item backItem = item(back);
    Item followerItem = item(follower);
    assertThat(holds.holdBack(List.of(backItem, followerItem)))
        .extracting(i -> i.envelope.id())
        .containsExactly("e1", "e2"); // the head is here: its lane keeps the order itself
    backItem.delivery.ack();
    followerItem.delivery.ack();
    holds.update(List.of(backItem, followerItem));

    Recorded later = new Recorded("e3", "k");
    assertThat(holds.holdBack(List.of(item(later))))
        .extracting(i -> i.envelope.id())
        .containsExactly("e3");
    assertThat(later.nacks).isEmpty();
  }

  @Test
  void aFollowerThatComesBackBeforeItsHeadInOnePollStillGoesAfterIt() {
    // EmbeddedTortureIT once: the failed event's copy came back late, in the same poll as the
    // follower sent back behind it and after it; both were processed in one lane, follower first.
    Recorded failed = new Recorded("e16", "k");
    Item first = item(failed);
    first.delivery.nack(Duration.ofMillis(100));
    holds.update(List.of(first));

    Recorded follower = new Recorded("e17", "k");
    Recorded back = new Recorded("e16", "k");
    Recorded other = new Recorded("x1", "other");
    assertThat(holds.holdBack(List.of(item(other), item(follower), item(back))))
        .extracting(i -> i.envelope.id())
        .containsExactly("x1", "e16", "e17");
    assertThat(follower.nacks).isEmpty();
  }

  @Test
  void noDelayIsLongerThanTheRetryPolicysLongest() {
    Recorded failed = new Recorded("e1", "k");
    Item first = item(failed);
    first.delivery.nack(Duration.ofSeconds(2));
    holds.update(List.of(first));
    List<Recorded> followers = new ArrayList<>();
    List<Item> items = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      Recorded r = new Recorded("f" + i, "k");
      followers.add(r);
      items.add(item(r));
    }
    assertThat(holds.holdBack(items)).isEmpty();
    for (Recorded r : followers) {
      assertThat(r.nacks).singleElement().matches(d -> d.compareTo(Duration.ofSeconds(2)) <= 0);
    }
    assertThat(holds.after(Duration.ofSeconds(5))).isEqualTo(Duration.ofSeconds(2));
    assertThat(holds.after(Duration.ofMillis(100))).isEqualTo(Duration.ofMillis(150));
  }

  @Test
  void aNewEventOfTheKeyStillGoesBehindTheFollowersSentBackOnceTheFailedOneIsDone() {
    // EmbeddedTortureIT on 2026-12-05: e1 failed, e2 was sent back behind it; e1 came back and
    // was processed, which ended the hold; e3 arrived before e2 was back, went free, and was
    // charged before e2.
    failsAndHoldsItsKey("e1");
    Recorded follower = new Recorded("e2", "k");
    assertThat(holds.holdBack(List.of(item(follower)))).isEmpty();
    assertThat(follower.nacks).hasSize(1);

    Item back = item(new Recorded("e1", "k"));
    assertThat(holds.holdBack(List.of(back))).containsExactly(back);
    back.delivery.ack();
    holds.update(List.of(back));

    Recorded fresh = new Recorded("e3", "k");
    assertThat(holds.holdBack(List.of(item(fresh)))).isEmpty();
    assertThat(fresh.nacks).singleElement().matches(d -> d.compareTo(follower.nacks.get(0)) > 0);

    Item followerBack = item(new Recorded("e2", "k"));
    Item freshBack = item(new Recorded("e3", "k"));
    assertThat(holds.holdBack(List.of(followerBack, freshBack)))
        .extracting(i -> i.envelope.id())
        .containsExactly("e2", "e3");
    followerBack.delivery.ack();
    freshBack.delivery.ack();
    holds.update(List.of(followerBack, freshBack));

    Recorded later = new Recorded("e4", "k");
    assertThat(holds.holdBack(List.of(item(later)))).hasSize(1);
    assertThat(later.nacks).isEmpty();
  }

  @Test
  void withTheHeadBackItsReturnedFollowersGoAfterItAndNewOnesWaitForTheFollowersStillAway() {
    failsAndHoldsItsKey("e1");
    Recorded f2 = new Recorded("e2", "k");
    Recorded f3 = new Recorded("e3", "k");
    Recorded f4 = new Recorded("e4", "k");
    assertThat(holds.holdBack(List.of(item(f2), item(f3), item(f4)))).isEmpty();

    // the head comes back after e2 (its copy was late), with e3 and a new e5; e4 is still away
    Recorded fresh = new Recorded("e5", "k");
    assertThat(
            holds.holdBack(
                List.of(
                    item(new Recorded("e2", "k")),
                    item(fresh),
                    item(new Recorded("e1", "k")),
                    item(new Recorded("e3", "k")))))
        .extracting(i -> i.envelope.id())
        .containsExactly("e1", "e2", "e3");
    assertThat(fresh.nacks).singleElement().matches(d -> d.compareTo(f4.nacks.get(0)) > 0);
  }

  @Test
  void aHeadThatNeverComesBackEndsItsHoldAndItsLineGoesOnWithoutSendingAnEventBackForever() {
    // A read-only review: the failed event and a follower went to another consumer (a
    // rebalance); a later event that came back was sent back again and again, its own due time
    // renewed each time, while the hold kept its head.
    failsAndHoldsItsKey("e1"); // due back in 100 ms, never comes
    pass(Duration.ofSeconds(3));
    assertThat(holds.holdBack(List.of(item(new Recorded("e2", "k"))))).isEmpty(); // never comes
    pass(Duration.ofMillis(2_500));
    assertThat(holds.holdBack(List.of(item(new Recorded("e9", "k"))))).isEmpty();
    pass(Duration.ofMillis(100)); // e1 was due more than 5 s ago: gone
    // What is asserted is that the line moves (no endless send-back), not its order: e9 passing
    // before e2, which may still come back, is the gap docs/inbox.md lists as not covered.
    Item e9back = item(new Recorded("e9", "k"));
    assertThat(holds.holdBack(List.of(e9back))).containsExactly(e9back);
    e9back.delivery.ack();
    holds.update(List.of(e9back));

    Recorded e10 = new Recorded("e10", "k");
    assertThat(holds.holdBack(List.of(item(e10)))).as("e2 may still come back").isEmpty();
    pass(Duration.ofSeconds(3)); // e2 was due more than 5 s ago
    Item e10back = item(new Recorded("e10", "k"));
    assertThat(holds.holdBack(List.of(e10back))).containsExactly(e10back);
  }

  @Test
  void aFollowerThatNeverComesBackHoldsItsKeyOnlyUntilAFewSecondsAfterItWasDue() {
    failsAndHoldsItsKey("e1");
    assertThat(holds.holdBack(List.of(item(new Recorded("e2", "k"))))).isEmpty();
    Item head = item(new Recorded("e1", "k"));
    assertThat(holds.holdBack(List.of(head))).containsExactly(head);
    head.delivery.ack();
    holds.update(List.of(head));

    Recorded e3 = new Recorded("e3", "k"); // e2 went to another consumer
    assertThat(holds.holdBack(List.of(item(e3)))).isEmpty();
    pass(KeyHolds.HOLD_GRACE.plusSeconds(1));
    Recorded e3back = new Recorded("e3", "k");
    assertThat(holds.holdBack(List.of(item(e3back)))).hasSize(1);
    assertThat(e3back.nacks).isEmpty();
  }
}
