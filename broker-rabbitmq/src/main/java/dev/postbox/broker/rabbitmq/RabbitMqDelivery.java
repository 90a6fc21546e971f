package dev.postbox.broker.rabbitmq;

import com.rabbitmq.client.AMQP;
import dev.postbox.spi.Deliveries;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

/** One AMQP delivery handed out; settling it acks, requeues or delays it on its shard's channel. */
final class RabbitMqDelivery implements Delivery {

  private final RabbitMqConsumer.Claim claim;
  private final long tag;
  private final boolean redelivered;
  private final AMQP.BasicProperties props;
  private final byte[] body;
  private final int attempt;
  private final boolean fromRetry;
  private final AtomicBoolean settled = new AtomicBoolean();
  private volatile Envelope envelope;

  RabbitMqDelivery(
      RabbitMqConsumer.Claim claim,
      long tag,
      boolean redelivered,
      AMQP.BasicProperties props,
      byte[] body,
      boolean quorum,
      boolean fromRetry) {
    this.claim = claim;
    this.fromRetry = fromRetry;
    this.tag = tag;
    this.redelivered = redelivered;
    this.props = props;
    this.body = body == null ? new byte[0] : body;
    int earlier =
        quorum ? AmqpHeaders.deliveryCount(props) : redelivered ? 1 : 0; // this copy's earlier
    this.attempt = AmqpHeaders.priorAttempts(props) + 1 + earlier;
  }

  @Override
  public Envelope envelope() {
    Envelope e = envelope;
    if (e == null) {
      e = AmqpHeaders.read(props, body);
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
    Map<String, String> m = new LinkedHashMap<>();
    m.put("queue", claim.queue());
    m.put("deliveryTag", Long.toString(tag));
    m.put("redelivered", Boolean.toString(redelivered));
    if (props.getMessageId() != null) {
      m.put("messageId", props.getMessageId());
    }
    return Map.copyOf(m);
  }

  @Override
  public void ack() {
    if (settled.compareAndSet(false, true)) {
      claim.ack(this);
    }
  }

  @Override
  public void nack(Duration delay) {
    Deliveries.requireNackDelay(delay, claim.maxNackDelay());
    if (settled.compareAndSet(false, true)) {
      claim.nack(this, delay);
    }
  }

  RabbitMqConsumer.Claim claim() {
    return claim;
  }

  /** Whether it came from the shard's retry queue: a delayed copy, back. */
  boolean fromRetry() {
    return fromRetry;
  }

  long tag() {
    return tag;
  }

  AMQP.BasicProperties props() {
    return props;
  }

  byte[] body() {
    return body;
  }

  /** The key the copy's order is kept by: the envelope's, or null when it cannot be read. */
  String keyOrNull() {
    try {
      return envelope().key();
    } catch (RuntimeException e) {
      return null;
    }
  }

  @Override
  public String toString() {
    return "RabbitMqDelivery[" + claim.queue() + "#" + tag + ", attempt=" + attempt + "]";
  }
}
