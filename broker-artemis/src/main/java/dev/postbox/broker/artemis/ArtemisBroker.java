package dev.postbox.broker.artemis;

import dev.postbox.spi.Broker;
import dev.postbox.spi.Capabilities;
import dev.postbox.spi.Consumer;
import dev.postbox.spi.Publisher;
import dev.postbox.spi.Subscription;
import jakarta.jms.Connection;
import jakarta.jms.Destination;
import jakarta.jms.JMSException;
import jakarta.jms.Session;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;

/** One Artemis connection factory, the shared publisher, and the consumers opened from it. */
final class ArtemisBroker implements Broker {

  /** Destinations named {@code topic:<name>} are topics; anything else is a queue. */
  static final String TOPIC_PREFIX = "topic:";

  static final String QUEUE_PREFIX = "queue:";

  private final ArtemisSettings settings;
  private final ActiveMQConnectionFactory factory;
  private final Capabilities capabilities;
  private final ArtemisPublisher publisher;
  private final List<ArtemisSubscriptionConsumer> consumers = new CopyOnWriteArrayList<>();
  private final AtomicBoolean closed = new AtomicBoolean();

  private ArtemisBroker(ArtemisSettings settings) {
    this.settings = settings;
    this.factory = new ActiveMQConnectionFactory(settings.url());
    // Bound every blocking call, so an unreachable or stuck broker fails retriably in time.
    factory.setCallTimeout(settings.publishTimeout().toMillis());
    factory.setCallFailoverTimeout(settings.publishTimeout().toMillis());
    Capabilities.Builder caps =
        Capabilities.builder()
            .perKeyOrdering(true)
            .delayedRedelivery(settings.maxNackDelay())
            .maxMessageBytes(settings.maxMessageBytes())
            .wireRules(ArtemisWireRules.INSTANCE);
    if (settings.duplicateDetection()) {
      caps.nativeDeduplication(settings.duplicateDetectionWindow());
    }
    this.capabilities = caps.build();
    this.publisher = new ArtemisPublisher(this, settings);
  }

  static ArtemisBroker open(ArtemisSettings settings) {
    return new ArtemisBroker(settings);
  }

  /** A new, started connection. Connects now, so failures surface here. */
  Connection connect() throws JMSException {
    Connection c =
        settings.user() == null
            ? factory.createConnection()
            : factory.createConnection(settings.user(), settings.password());
    c.start();
    return c;
  }

  static Destination destination(Session session, String name) throws JMSException {
    return name.startsWith(TOPIC_PREFIX)
        ? session.createTopic(addressName(name))
        : session.createQueue(addressName(name));
  }

  /** The queue's or topic's own name, without the {@code topic:} or {@code queue:} prefix. */
  static String addressName(String destination) {
    if (destination.startsWith(TOPIC_PREFIX)) {
      return destination.substring(TOPIC_PREFIX.length());
    }
    return destination.startsWith(QUEUE_PREFIX)
        ? destination.substring(QUEUE_PREFIX.length())
        : destination;
  }

  @Override
  public String name() {
    return ArtemisBrokerProvider.NAME;
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
    ArtemisSubscriptionConsumer consumer =
        new ArtemisSubscriptionConsumer(this, settings, subscription, consumers::remove);
    consumers.add(consumer);
    return consumer;
  }

  /**
   * Opens and closes a connection: Artemis has no cheaper round trip for a client. Bounded by the
   * call timeout ({@code publish.timeout}), not by {@code timeout}.
   */
  @Override
  public void ping(java.time.Duration timeout) {
    checkOpen();
    try (Connection c = connect()) {
      // connected and started: the broker answered
    } catch (JMSException e) {
      throw new dev.postbox.spi.RetriableBrokerException(
          "artemis did not answer: " + ArtemisErrors.map("ping", e).getMessage(), e);
    }
  }

  boolean isClosed() {
    return closed.get();
  }

  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    consumers.forEach(ArtemisSubscriptionConsumer::close);
    publisher.closeAll();
    factory.close();
  }

  private void checkOpen() {
    if (closed.get()) {
      throw new IllegalStateException("artemis broker is closed");
    }
  }
}
