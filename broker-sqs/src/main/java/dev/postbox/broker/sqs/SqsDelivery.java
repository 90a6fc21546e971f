package dev.postbox.broker.sqs;

import dev.postbox.spi.Deliveries;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import software.amazon.awssdk.services.sqs.model.Message;
import software.amazon.awssdk.services.sqs.model.MessageSystemAttributeName;

/** One received SQS message. */
final class SqsDelivery implements Delivery {

  private final SqsSubscriptionConsumer owner;
  private final Message message;
  private final AtomicBoolean settled = new AtomicBoolean();
  private volatile Envelope envelope;

  SqsDelivery(SqsSubscriptionConsumer owner, Message message) {
    this.owner = owner;
    this.message = message;
  }

  @Override
  public Envelope envelope() {
    Envelope e = envelope;
    if (e == null) {
      e = SqsMessageCodec.decode(message.body(), message.messageAttributes());
      envelope = e;
    }
    return e;
  }

  /** SQS's {@code ApproximateReceiveCount}: kept by the queue, so it survives restarts. */
  @Override
  public int attempt() {
    String count = message.attributes().get(MessageSystemAttributeName.APPROXIMATE_RECEIVE_COUNT);
    try {
      return count == null ? 1 : Math.max(1, Integer.parseInt(count));
    } catch (NumberFormatException e) {
      return 1;
    }
  }

  @Override
  public Map<String, String> metadata() {
    Map<String, String> m = new HashMap<>();
    m.put("messageId", message.messageId());
    String group = message.attributes().get(MessageSystemAttributeName.MESSAGE_GROUP_ID);
    if (group != null) {
      m.put("messageGroupId", group);
    }
    String sent = message.attributes().get(MessageSystemAttributeName.SENT_TIMESTAMP);
    if (sent != null) {
      m.put("sentTimestamp", sent);
    }
    return Map.copyOf(m);
  }

  @Override
  public void ack() {
    if (settled.compareAndSet(false, true)) {
      owner.ack(this);
    }
  }

  @Override
  public void nack(Duration delay) {
    Deliveries.requireNackDelay(delay, owner.maxNackDelay());
    if (settled.compareAndSet(false, true)) {
      owner.nack(this, delay);
    }
  }

  String receiptHandle() {
    return message.receiptHandle();
  }

  @Override
  public String toString() {
    return "SqsDelivery[" + message.messageId() + ", attempt=" + attempt() + "]";
  }
}
