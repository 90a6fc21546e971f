package dev.postbox.runtime.inbox;

import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;
import java.time.Duration;
import java.util.Map;

/**
 * The inbox's one {@link Delivery} decorator: it remembers how the delivery was settled (the key
 * holds read that after a lane), and tells whoever watches it (see {@link Stalls}) when it is
 * acknowledged. A delivery is wrapped once, where it enters the inbox.
 */
final class Tracked implements Delivery {

  private static final Runnable NOBODY = () -> {};

  private final Delivery d;
  private final Runnable onAck;
  private volatile Duration delay;
  private volatile boolean acked;

  private Tracked(Delivery d, Runnable onAck) {
    this.d = d;
    this.onAck = onAck;
  }

  /** {@code d} itself if it is tracked already, else {@code d} tracked, watched by nobody. */
  static Tracked of(Delivery d) {
    return d instanceof Tracked t ? t : new Tracked(d, NOBODY);
  }

  /** {@code d} tracked, with {@code onAck} run after each acknowledgement. */
  static Tracked watched(Delivery d, Runnable onAck) {
    return new Tracked(d, onAck);
  }

  /** Whether it was acknowledged or nacked through this wrapper. */
  boolean settled() {
    return acked || delay != null;
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
    onAck.run();
  }

  @Override
  public void nack(Duration delay) {
    try {
      d.nack(delay); // a watcher keeps watching: it is still waiting
    } catch (IllegalArgumentException outsideTheBrokersRange) {
      // longer than the broker's nack.max.delay: the inbox's retry delays wait in the database
      // and are not cut to it; the rare nacks left (an unreadable message, a failed lane) come
      // back at once instead of staying unsettled
      delay = Duration.ZERO;
      d.nack(delay);
    }
    this.delay = delay;
  }
}
