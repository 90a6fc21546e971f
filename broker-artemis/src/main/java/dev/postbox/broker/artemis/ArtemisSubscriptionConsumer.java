package dev.postbox.broker.artemis;

import dev.postbox.spi.Consumer;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Subscription;
import jakarta.jms.BytesMessage;
import jakarta.jms.Connection;
import jakarta.jms.Destination;
import jakarta.jms.JMSException;
import jakarta.jms.Message;
import jakarta.jms.MessageConsumer;
import jakarta.jms.MessageProducer;
import jakarta.jms.Session;
import jakarta.jms.Topic;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.activemq.artemis.api.jms.ActiveMQJMSConstants;
import org.apache.activemq.artemis.jms.client.ActiveMQDestination;

/**
 * One JMS consumer in Artemis' individual-acknowledge mode: an ack acknowledges exactly one
 * message, never the ones received before it.
 *
 * <p>A JMS session is single-threaded, so settlements from any thread are queued and applied by the
 * polling thread (or at close). A nack with delay re-sends a copy of the message with a JMS
 * delivery delay (an Artemis scheduled message), keeping its group and attempt count, and then
 * acknowledges the original: JMS has no per-message negative acknowledgement. On a topic the copy
 * goes to the group's own subscription queue (its fully qualified name), so no other group sees it.
 *
 * <p>A lost connection (a broker restart, a network cut) fails that poll retriably and drops the
 * session; the next poll connects again. Deliveries received on the lost session can no longer be
 * settled: their acks and nacks are dropped, and the broker redelivers them, as it does for any
 * unacknowledged message of a closed session.
 */
final class ArtemisSubscriptionConsumer implements Consumer {

  private static final System.Logger LOG =
      System.getLogger(ArtemisSubscriptionConsumer.class.getName());
  private static final long RECEIVE_SLICE_MS = 100;

  /** Artemis' scheduled delivery time property: epoch millis. */
  private static final String SCHEDULED_DELIVERY_TIME =
      org.apache.activemq.artemis.api.core.Message.HDR_SCHEDULED_DELIVERY_TIME.toString();

  private final Subscription subscription;
  private final ArtemisSettings settings;
  private final java.util.function.Consumer<ArtemisSubscriptionConsumer> onClose;
  private final ReentrantLock sessionLock = new ReentrantLock();
  private final ConcurrentLinkedQueue<Settlement> settlements = new ConcurrentLinkedQueue<>();
  private final AtomicBoolean closed = new AtomicBoolean();
  private final Set<ArtemisDelivery> inFlight = Collections.newSetFromMap(new IdentityHashMap<>());
  private final ArtemisBroker broker;

  /**
   * Per message group (the event's key): when its last nacked copy is due, in epoch millis. A later
   * nack of the same key is never due before it, whatever its delay (a shorter one is due at the
   * same moment), so a key's copies come back in the order they were nacked (the inbox sends a
   * key's followers back behind its failed event, and the time between a nack and its re-send here
   * must not reorder them). Polling thread only.
   */
  private final Map<String, Long> lastDueByGroup = new HashMap<>();

  /** The live session; null after a lost connection until the next poll connects again. */
  private Channel channel;

  /**
   * One connection's session, consumer, and producer for delayed re-sends, with where those go: the
   * queue itself, or for a topic the group's own subscription queue, never the whole topic.
   */
  private record Channel(
      Connection connection,
      Session session,
      MessageConsumer consumer,
      MessageProducer retries,
      Destination retryTarget) {}

  ArtemisSubscriptionConsumer(
      ArtemisBroker broker,
      ArtemisSettings settings,
      Subscription subscription,
      java.util.function.Consumer<ArtemisSubscriptionConsumer> onClose) {
    this.broker = broker;
    this.subscription = subscription;
    this.settings = settings;
    this.onClose = onClose;
    this.channel = connect(); // a subscribe that cannot connect fails at once, as documented
  }

  private Channel connect() {
    Connection c = null;
    try {
      c = broker.connect();
      Session session = c.createSession(false, ActiveMQJMSConstants.INDIVIDUAL_ACKNOWLEDGE);
      Destination d = ArtemisBroker.destination(session, subscription.destination());
      MessageConsumer consumer;
      Destination retryTarget;
      if (d instanceof Topic topic) {
        consumer = session.createSharedDurableConsumer(topic, subscription.group());
        // The fully qualified name of the group's subscription queue (address::queue), as a topic
        // (the address routes multicast): a copy sent to the topic itself would reach every group.
        retryTarget =
            session.createTopic(
                topic.getTopicName()
                    + "::"
                    + ActiveMQDestination.createQueueNameForSubscription(
                        true, c.getClientID(), subscription.group()));
      } else {
        consumer = session.createConsumer(d);
        retryTarget = d;
      }
      return new Channel(c, session, consumer, session.createProducer(null), retryTarget);
    } catch (JMSException | RuntimeException e) {
      closeQuietly(c);
      throw ArtemisErrors.map("subscribe to " + subscription.destination(), e);
    }
  }

  /** Called with the session lock held, after the connection failed. */
  private void dropChannel() {
    if (channel != null) {
      closeQuietly(channel.connection());
      channel = null;
    }
    inFlight.clear(); // the broker redelivers them; their settlements find nothing to apply
  }

  @Override
  public Subscription subscription() {
    return subscription;
  }

  @Override
  public List<Delivery> poll(int maxDeliveries, Duration timeout) {
    if (maxDeliveries < 1) {
      throw new IllegalArgumentException("maxDeliveries must be >= 1: " + maxDeliveries);
    }
    checkOpen();
    long deadline = System.nanoTime() + timeout.toNanos();
    sessionLock.lock();
    try {
      if (channel == null) {
        channel = connect();
        LOG.log(Level.INFO, "reconnected the consumer of " + subscription.destination());
      }
      MessageConsumer consumer = channel.consumer();
      List<Delivery> out = new ArrayList<>();
      while (true) {
        checkOpen();
        applySettlements();
        int room =
            Math.min(maxDeliveries, subscription.maxInFlight() - inFlight.size()) - out.size();
        if (room <= 0) {
          if (!out.isEmpty() || System.nanoTime() >= deadline) {
            return out;
          }
          waitSlice(deadline);
          continue;
        }
        long remainingMs = Math.max(0, (deadline - System.nanoTime()) / 1_000_000);
        Message m =
            out.isEmpty() && remainingMs > 0
                ? consumer.receive(Math.max(1, Math.min(remainingMs, RECEIVE_SLICE_MS)))
                : consumer.receiveNoWait();
        if (m != null) {
          // The body is read now, before the next receive: the JMS client streams a large
          // message's body, and a receive before it is read leaves it cut at the front.
          ArtemisDelivery d = new ArtemisDelivery(this, m, bodyOf(m), attempt(m));
          inFlight.add(d);
          out.add(d);
          continue;
        }
        if (!out.isEmpty() || System.nanoTime() >= deadline) {
          return out;
        }
      }
    } catch (JMSException | jakarta.jms.JMSRuntimeException e) {
      if (closed.get()) {
        return List.of();
      }
      // Most likely the connection is gone; a fresh one at the next poll either works or fails
      // retriably again.
      dropChannel();
      throw ArtemisErrors.map("poll " + subscription.destination(), e);
    } finally {
      sessionLock.unlock();
    }
  }

  private void waitSlice(long deadline) {
    long ms = Math.min(RECEIVE_SLICE_MS, Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
    sessionLock.unlock();
    try {
      java.util.concurrent.locks.LockSupport.parkNanos(ms * 1_000_000);
    } finally {
      sessionLock.lock();
    }
  }

  /**
   * The body, or the failure to read it: a message whose body cannot be read (a large message's
   * stream that timed out) is this delivery's problem, told by {@link ArtemisDelivery#envelope()}
   * as a retriable error, not the session's.
   */
  private static Object bodyOf(Message m) {
    try {
      return CloudEventsJmsProperties.body(m);
    } catch (JMSException e) {
      return e;
    }
  }

  private static int attempt(Message m) throws JMSException {
    int deliveryCount =
        m.propertyExists("JMSXDeliveryCount") ? m.getIntProperty("JMSXDeliveryCount") : 1;
    int prior =
        m.propertyExists(CloudEventsJmsProperties.PRIOR_ATTEMPTS)
            ? m.getIntProperty(CloudEventsJmsProperties.PRIOR_ATTEMPTS)
            : 0;
    return prior + Math.max(1, deliveryCount);
  }

  Duration maxNackDelay() {
    return settings.maxNackDelay();
  }

  /** Called by deliveries, from any thread. */
  void settle(Settlement s) {
    if (!closed.get()) {
      settlements.add(s);
    }
  }

  private void applySettlements() {
    if (channel == null) {
      settlements.clear(); // for deliveries of a lost session: the broker redelivers them
      return;
    }
    Settlement s;
    while ((s = settlements.poll()) != null) {
      ArtemisDelivery d = s.delivery();
      if (!inFlight.remove(d)) {
        continue;
      }
      try {
        if (!s.ack()) {
          resendLater(d, s.delay());
        }
        d.message().acknowledge();
      } catch (JMSException | RuntimeException e) {
        // Not acknowledged: the broker redelivers the original when this session ends.
        LOG.log(Level.WARNING, "settling " + d + " failed; it will be redelivered: " + e);
      }
    }
  }

  private void resendLater(ArtemisDelivery d, Duration delay) throws JMSException {
    Message original = d.message();
    BytesMessage copy = channel.session().createBytesMessage();
    copy.writeBytes(d.bodyOrThrow());
    for (var p : CloudEventsJmsProperties.properties(original).entrySet()) {
      String name = p.getKey();
      if (name.startsWith("JMSX") && !name.equals(CloudEventsJmsProperties.GROUP)) {
        continue;
      }
      if (name.startsWith("_AMQ_") || name.equals(CloudEventsJmsProperties.PRIOR_ATTEMPTS)) {
        continue;
      }
      copy.setObjectProperty(name, original.getObjectProperty(name));
    }
    copy.setIntProperty(CloudEventsJmsProperties.PRIOR_ATTEMPTS, d.attempt());
    if (settings.duplicateDetection() && original.propertyExists("ce_id")) {
      // A crash between this send and the ack below re-sends the same copy: dedup drops it.
      copy.setStringProperty(
          CloudEventsJmsProperties.DUPLICATE_ID,
          original.getStringProperty("ce_id") + "#retry" + (d.attempt() + 1));
    }
    long now = System.currentTimeMillis();
    long due = now + delay.toMillis();
    // JMSXGroupID is not reported by propertyExists on Artemis: read it.
    String group = original.getStringProperty(CloudEventsJmsProperties.GROUP);
    if (group != null) {
      if (lastDueByGroup.size() > 10_000) {
        lastDueByGroup.values().removeIf(t -> t < now);
      }
      Long last = lastDueByGroup.get(group);
      if (last != null && due < last) {
        // The same moment, not a millisecond later: Artemis puts each batch of scheduled messages
        // that fall due at the head of the queue, so a copy due later would go in front of the
        // earlier one if that one is still waiting there. Copies due together keep their order.
        due = last;
      }
    }
    // The absolute time, not a delivery delay: the client would add its own clock reading at the
    // send to a delay, so two copies meant for one moment could get times a millisecond apart.
    copy.setLongProperty(SCHEDULED_DELIVERY_TIME, due);
    MessageProducer retries = channel.retries();
    retries.setDeliveryDelay(0);
    retries.send(
        channel.retryTarget(),
        copy,
        jakarta.jms.DeliveryMode.PERSISTENT,
        original.getJMSPriority(),
        0);
    if (group != null) {
      lastDueByGroup.put(group, due); // only once sent: a failed send holds nothing back
    }
  }

  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    sessionLock.lock();
    try {
      try {
        applySettlements();
      } finally {
        // Closing the session hands every unacknowledged message back to the broker.
        if (channel != null) {
          closeQuietly(channel.connection());
        }
      }
    } finally {
      sessionLock.unlock();
      onClose.accept(this);
    }
  }

  private void checkOpen() {
    if (closed.get()) {
      throw new IllegalStateException("artemis consumer is closed");
    }
  }

  private static void closeQuietly(Connection c) {
    if (c == null) {
      return;
    }
    try {
      c.close();
    } catch (JMSException | RuntimeException e) {
      LOG.log(Level.DEBUG, "closing a consumer connection failed: " + e);
    }
  }

  /** A settlement waiting for the session's thread. */
  record Settlement(ArtemisDelivery delivery, boolean ack, Duration delay) {}
}
