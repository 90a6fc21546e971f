package dev.postbox.broker.kafka;

import dev.postbox.spi.Deliveries;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/** One record handed out; settling it queues the settlement for the poll thread. */
final class KafkaDelivery implements Delivery {

  private final KafkaSubscriptionConsumer owner;
  private final KafkaSubscriptionConsumer.PartitionState state;
  private final ConsumerRecord<byte[], byte[]> record;
  private final int attempt;
  private final AtomicBoolean settled = new AtomicBoolean();
  private volatile Envelope envelope;

  KafkaDelivery(
      KafkaSubscriptionConsumer owner,
      KafkaSubscriptionConsumer.PartitionState state,
      ConsumerRecord<byte[], byte[]> record,
      int attempt) {
    this.owner = owner;
    this.state = state;
    this.record = record;
    this.attempt = attempt;
  }

  @Override
  public Envelope envelope() {
    Envelope e = envelope;
    if (e == null) {
      e = CloudEventsKafkaHeaders.fromRecord(record.key(), record.value(), record.headers());
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
    return Map.of(
        "topic", record.topic(),
        "partition", Integer.toString(record.partition()),
        "offset", Long.toString(record.offset()),
        "timestamp", Long.toString(record.timestamp()));
  }

  @Override
  public void ack() {
    if (settled.compareAndSet(false, true)) {
      owner.settle(
          new KafkaSubscriptionConsumer.Settlement(this, true, System.nanoTime(), Duration.ZERO));
    }
  }

  @Override
  public void nack(Duration delay) {
    Deliveries.requireNackDelay(delay, owner.maxNackDelay());
    if (settled.compareAndSet(false, true)) {
      owner.settle(new KafkaSubscriptionConsumer.Settlement(this, false, System.nanoTime(), delay));
    }
  }

  long offset() {
    return record.offset();
  }

  KafkaSubscriptionConsumer.PartitionState state() {
    return state;
  }

  @Override
  public String toString() {
    return "KafkaDelivery["
        + record.topic()
        + "-"
        + record.partition()
        + "@"
        + record.offset()
        + ", attempt="
        + attempt
        + "]";
  }
}
