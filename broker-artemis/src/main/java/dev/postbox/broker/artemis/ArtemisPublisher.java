package dev.postbox.broker.artemis;

import dev.postbox.spi.BatchPublishException;
import dev.postbox.spi.BrokerException;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.KeyedBatch;
import dev.postbox.spi.Publisher;
import jakarta.jms.BytesMessage;
import jakarta.jms.Connection;
import jakarta.jms.DeliveryMode;
import jakarta.jms.JMSException;
import jakarta.jms.MessageProducer;
import jakarta.jms.Session;
import java.lang.System.Logger.Level;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedDeque;

/**
 * Publishes persistent messages in transacted sessions: a publish returns after the commit, when
 * the broker has the message in its journal. JMS sessions are single-threaded, so each publishing
 * thread borrows a channel (connection + session + producer) from a small pool. A channel that
 * fails is thrown away with its connection; the next call connects afresh.
 */
final class ArtemisPublisher implements Publisher {

  private static final System.Logger LOG = System.getLogger(ArtemisPublisher.class.getName());

  private final ArtemisBroker broker;
  private final ArtemisSettings settings;
  private final ConcurrentLinkedDeque<Channel> idle = new ConcurrentLinkedDeque<>();

  ArtemisPublisher(ArtemisBroker broker, ArtemisSettings settings) {
    this.broker = broker;
    this.settings = settings;
  }

  @Override
  public void publish(String destination, Envelope envelope) {
    Publisher.publishAsBatchOfOne(this, destination, envelope);
  }

  /** One transacted session: the batch commits together, so it succeeds or fails as a whole. */
  @Override
  public void publishAll(String destination, List<Envelope> batch) {
    if (broker.isClosed()) {
      throw new IllegalStateException("artemis broker is closed");
    }
    if (destination == null || destination.isBlank()) {
      throw new IllegalArgumentException("destination must not be blank");
    }
    if (batch.isEmpty()) {
      return;
    }
    KeyedBatch keyed = new KeyedBatch(batch.size());
    List<Integer> sendable = keyed.sendable(destination, batch, broker.capabilities());
    if (!sendable.isEmpty()) {
      sendInOneTransaction(destination, batch, sendable, keyed);
    }
    keyed.finish();
  }

  private void sendInOneTransaction(
      String destination, List<Envelope> batch, List<Integer> sendable, KeyedBatch keyed) {
    Channel channel = null;
    try {
      channel = borrow();
      for (int i : sendable) {
        channel.send(destination, batch.get(i), settings.duplicateDetection());
      }
      channel.session.commit();
      idle.push(channel);
    } catch (JMSException | RuntimeException e) {
      discard(channel); // the transaction is in doubt; closing the session rolls it back
      if (!isDuplicate(e)) {
        BrokerException failure = ArtemisErrors.map("publish to " + destination, e);
        sendable.forEach(i -> keyed.failed(i, failure));
      } else if (sendable.size() > 1) {
        // Some envelope was published before (a retry after a lost commit reply), and the broker
        // refuses the whole transaction for it: publish one by one, where a duplicate is done.
        onePerTransaction(destination, batch, sendable, keyed);
      }
      // A single duplicate is already on the broker: published.
    }
  }

  private void onePerTransaction(
      String destination, List<Envelope> batch, List<Integer> indexes, KeyedBatch keyed) {
    for (int i : indexes) {
      try {
        publishAll(destination, List.of(batch.get(i)));
      } catch (BatchPublishException e) {
        keyed.failed(i, e.failures().get(0));
      }
    }
  }

  /** Artemis refuses a transaction that holds an already-seen duplicate-detection id. */
  static boolean isDuplicate(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t.getClass().getSimpleName().contains("DuplicateId")
          || (t.getMessage() != null && t.getMessage().contains("Duplicate message detected"))) {
        return true;
      }
    }
    return false;
  }

  private Channel borrow() throws JMSException {
    Channel c = idle.poll();
    return c != null ? c : new Channel(broker.connect());
  }

  private void discard(Channel channel) {
    if (channel != null) {
      channel.close();
    }
  }

  void closeAll() {
    Channel c;
    while ((c = idle.poll()) != null) {
      c.close();
    }
  }

  /** A connection with one transacted session and an anonymous producer. */
  private static final class Channel {
    final Connection connection;
    final Session session;
    final MessageProducer producer;

    Channel(Connection connection) throws JMSException {
      this.connection = connection;
      try {
        this.session = connection.createSession(true, Session.SESSION_TRANSACTED);
        this.producer = session.createProducer(null);
        producer.setDeliveryMode(DeliveryMode.PERSISTENT);
      } catch (JMSException e) {
        connection.close();
        throw e;
      }
    }

    void send(String destination, Envelope e, boolean duplicateDetection) throws JMSException {
      BytesMessage m = session.createBytesMessage();
      m.writeBytes(e.payload());
      CloudEventsJmsProperties.write(e, m);
      if (duplicateDetection) {
        m.setStringProperty(CloudEventsJmsProperties.DUPLICATE_ID, e.id());
      }
      long ttl = e.millisToLive(java.time.Instant.now());
      if (ttl > 0) {
        // The event's expiry as the message's: Artemis drops it unconsumed once past it (the
        // inbox checks the expirytime attribute as well, for copies and for other brokers)
        producer.send(
            ArtemisBroker.destination(session, destination),
            m,
            DeliveryMode.PERSISTENT,
            jakarta.jms.Message.DEFAULT_PRIORITY,
            ttl);
      } else {
        producer.send(ArtemisBroker.destination(session, destination), m);
      }
    }

    void close() {
      try {
        connection.close();
      } catch (JMSException | RuntimeException e) {
        LOG.log(Level.DEBUG, "closing a publisher connection failed: " + e);
      }
    }
  }
}
