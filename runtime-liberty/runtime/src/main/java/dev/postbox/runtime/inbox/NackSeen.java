package dev.postbox.runtime.inbox;

import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;
import java.time.Duration;
import java.util.Map;

/** A delivery that remembers how it was settled. */
final class NackSeen implements Delivery {
  private final Delivery d;
  volatile Duration delay;
  volatile boolean acked;

  NackSeen(Delivery d) {
    this.d = d;
  }

  @Override
  public Envelope envelope() {
    return d.envelope();
  }

  @Override
  public int attempt() {
    return d.attempt();
  }

  @Override
  public Map<String, String> metadata() {
    return d.metadata();
  }

  @Override
  public void ack() {
    acked = true;
    d.ack();
  }

  @Override
  public void nack(Duration delay) {
    this.delay = delay;
    d.nack(delay);
  }
}
