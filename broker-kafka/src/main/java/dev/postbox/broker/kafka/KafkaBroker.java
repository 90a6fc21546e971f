package dev.postbox.broker.kafka;

import dev.postbox.spi.Broker;
import dev.postbox.spi.Capabilities;
import dev.postbox.spi.Consumer;
import dev.postbox.spi.Publisher;
import dev.postbox.spi.Subscription;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/** One Kafka connection: a shared idempotent producer and the consumers opened from it. */
final class KafkaBroker implements Broker {

  private final KafkaSettings settings;
  private final Capabilities capabilities;
  private final KafkaPublisher publisher;
  private final List<KafkaSubscriptionConsumer> consumers = new CopyOnWriteArrayList<>();
  private final AtomicBoolean closed = new AtomicBoolean();
  private final AtomicInteger consumerSequence = new AtomicInteger();

  private KafkaBroker(KafkaSettings settings) {
    this.settings = settings;
    this.capabilities =
        Capabilities.builder()
            .perKeyOrdering(true)
            .delayedRedelivery(settings.maxNackDelay())
            .maxMessageBytes(settings.maxMessageBytes())
            .build();
    // The producer connects lazily; an unreachable cluster shows up as a retriable publish error.
    this.publisher = new KafkaPublisher(settings, closed);
  }

  static KafkaBroker open(KafkaSettings settings) {
    return new KafkaBroker(settings);
  }

  @Override
  public String name() {
    return KafkaBrokerProvider.NAME;
  }

  @Override
  public Capabilities capabilities() {
    return capabilities;
  }

  @Override
  public Publisher publisher() {
    checkOpen();
    return publisher;
  }

  @Override
  public Consumer subscribe(Subscription subscription) {
    checkOpen();
    KafkaSubscriptionConsumer consumer =
        new KafkaSubscriptionConsumer(
            settings,
            subscription,
            Integer.toString(consumerSequence.incrementAndGet()),
            consumers::remove);
    consumers.add(consumer);
    return consumer;
  }

  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    consumers.forEach(KafkaSubscriptionConsumer::close);
    publisher.closeProducer();
  }

  private void checkOpen() {
    if (closed.get()) {
      throw new IllegalStateException("kafka broker is closed");
    }
  }
}
