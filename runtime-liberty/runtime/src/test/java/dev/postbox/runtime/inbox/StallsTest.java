package dev.postbox.runtime.inbox;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.MalformedMessageException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class StallsTest {

  private final AtomicLong clock = new AtomicLong(1);
  private final Stalls stalls = new Stalls(Duration.ofMinutes(15), clock::get);

  @Test
  void aDeliveryNackedOverAndOverIsStuckWhileOthersAroundItAreAcked() {
    Delivery poison = delivery("poison", 1);
    stalls.watch(List.of(poison)).get(0).nack(Duration.ofSeconds(1));
    for (int minute = 1; minute <= 20; minute++) {
      clock.addAndGet(Duration.ofMinutes(1).toNanos());
      // Kafka re-reads the batch: the poison again, and an acked neighbour as a duplicate
      List<Delivery> again = stalls.watch(List.of(delivery("poison", 1), delivery("ok", 2)));
      again.get(0).nack(Duration.ofSeconds(1));
      again.get(1).ack();
    }
    assertThat(stalls.stuckFor()).hasValue(Duration.ofMinutes(20));
  }

  @Test
  void aDeliveryNeverSettledIsStuckAndAnAckEndsIt() {
    List<Delivery> watched = stalls.watch(List.of(delivery("a", 1), delivery("b", 2)));
    watched.get(0).ack();
    clock.addAndGet(Duration.ofMinutes(3).toNanos());
    assertThat(stalls.stuckFor()).hasValue(Duration.ofMinutes(3));
    watched.get(1).ack();
    assertThat(stalls.stuckFor()).isEmpty();
  }

  @Test
  void aMalformedDeliveryIsKnownByItsPositionAndOneThatWentElsewhereIsForgotten() {
    stalls.watch(List.of(malformed(7))).get(0).nack(Duration.ofSeconds(1));
    clock.addAndGet(Duration.ofMinutes(10).toNanos());
    stalls.watch(List.of(malformed(7))).get(0).nack(Duration.ofSeconds(1));
    assertThat(stalls.stuckFor()).hasValue(Duration.ofMinutes(10));
    // a rebalance took it to another consumer: not seen for longer than forgetAfter
    clock.addAndGet(Duration.ofMinutes(16).toNanos());
    assertThat(stalls.stuckFor()).isEmpty();
  }

  private static Delivery delivery(String id, long offset) {
    Envelope e =
        Envelope.builder().id(id).source("urn:test").type("T").payload(new byte[] {1}).build();
    return new Fixed(() -> e, offset);
  }

  private static Delivery malformed(long offset) {
    return new Fixed(
        () -> {
          throw new MalformedMessageException("not an event", new byte[0], Map.of(), null);
        },
        offset);
  }

  private record Fixed(java.util.function.Supplier<Envelope> e, long offset) implements Delivery {
    @Override
    public Envelope envelope() {
      return e.get();
    }

    @Override
    public int attempt() {
      return 1;
    }

    @Override
    public Map<String, String> metadata() {
      return Map.of("offset", Long.toString(offset));
    }

    @Override
    public void ack() {}

    @Override
    public void nack(Duration delay) {}
  }
}
