package dev.postbox.broker.artemis;

import dev.postbox.spi.Deliveries;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.RetriableBrokerException;
import jakarta.jms.JMSException;
import jakarta.jms.Message;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

/** One JMS message handed out; settling it queues the settlement for the session's thread. */
final class ArtemisDelivery implements Delivery {

  private final ArtemisSubscriptionConsumer owner;
  private final Message message;
  private final Object body; // the bytes, or the JMSException reading them
  private final int attempt;
  private final AtomicBoolean settled = new AtomicBoolean();
  private volatile Envelope envelope;

  /**
   * @param body the message's body, read when it was received (never read later: see {@link
   *     ArtemisSubscriptionConsumer#poll}), or the {@link JMSException} reading it threw
   */
  ArtemisDelivery(ArtemisSubscriptionConsumer owner, Message message, Object body, int attempt) {
    this.owner = owner;
    this.message = message;
    this.body = body;
    this.attempt = attempt;
  }

  @Override
  public Envelope envelope() {
    Envelope e = envelope;
    if (e == null) {
      try {
        e = CloudEventsJmsProperties.read(message, bodyOrThrow());
      } catch (JMSException failure) {
        throw new RetriableBrokerException("reading a JMS message failed: " + failure, failure);
      }
      envelope = e;
    }
    return e;
  }

  @Override
  public int attempt() {
    return attempt;
  }

  @Override
  public Map<String, String> metadata() {
    Map<String, String> m = new HashMap<>();
    try {
      m.put("messageId", String.valueOf(message.getJMSMessageID()));
      m.put("destination", String.valueOf(message.getJMSDestination()));
      m.put("redelivered", Boolean.toString(message.getJMSRedelivered()));
    } catch (JMSException e) {
      m.put("error", e.toString());
    }
    return Map.copyOf(m);
  }

  @Override
  public void ack() {
    if (settled.compareAndSet(false, true)) {
      owner.settle(new ArtemisSubscriptionConsumer.Settlement(this, true, Duration.ZERO));
    }
  }

  @Override
  public void nack(Duration delay) {
    Deliveries.requireNackDelay(delay, owner.maxNackDelay());
    if (settled.compareAndSet(false, true)) {
      owner.settle(new ArtemisSubscriptionConsumer.Settlement(this, false, delay));
    }
  }

  Message message() {
    return message;
  }

  /** The body as received (not a copy), or the failure to read it. */
  byte[] bodyOrThrow() throws JMSException {
    if (body instanceof JMSException failure) {
      throw failure;
    }
    return (byte[]) body;
  }

  @Override
  public String toString() {
    try {
      return "ArtemisDelivery[" + message.getJMSMessageID() + ", attempt=" + attempt + "]";
    } catch (JMSException e) {
      return "ArtemisDelivery[attempt=" + attempt + "]";
    }
  }
}
