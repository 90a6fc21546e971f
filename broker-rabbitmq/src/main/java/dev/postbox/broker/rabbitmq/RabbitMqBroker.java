package dev.postbox.broker.rabbitmq;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.RecoveryDelayHandler;
import dev.postbox.spi.Broker;
import dev.postbox.spi.BrokerException;
import dev.postbox.spi.Capabilities;
import dev.postbox.spi.Consumer;
import dev.postbox.spi.Publisher;
import dev.postbox.spi.RetriableBrokerException;
import dev.postbox.spi.Subscription;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One connection factory, the shared publisher (with a connection of its own) and the consumers
 * opened from it (each with its own connection, so a publisher blocked by the server's flow control
 * never stalls a consumer's acks). Connections recover by themselves after a network failure or a
 * server restart, with a back-off that doubles from 100 ms up to {@code recovery.max.interval}; the
 * adapter re-declares and re-subscribes itself (topology recovery is off), because it keeps track
 * of which shards it holds.
 */
final class RabbitMqBroker implements Broker {

  private static final System.Logger LOG = System.getLogger(RabbitMqBroker.class.getName());

  private final RabbitMqSettings settings;
  private final ConnectionFactory factory;
  private final Capabilities capabilities;
  private final Shards shards;
  private final RabbitMqPublisher publisher;
  private final List<RabbitMqConsumer> consumers = new CopyOnWriteArrayList<>();
  private final Set<String> prepared = ConcurrentHashMap.newKeySet();
  private final AtomicBoolean closed = new AtomicBoolean();

  private RabbitMqBroker(RabbitMqSettings settings) {
    this.settings = settings;
    this.factory = factory(settings);
    this.shards = new Shards(settings);
    this.capabilities =
        Capabilities.builder()
            .perKeyOrdering(true)
            .delayedRedelivery(settings.maxNackDelay())
            .maxMessageBytes(settings.maxMessageBytes())
            .wireRules(RabbitMqWireRules.INSTANCE)
            .build();
    this.publisher = new RabbitMqPublisher(this, settings);
  }

  static RabbitMqBroker open(RabbitMqSettings settings) {
    return new RabbitMqBroker(settings);
  }

  private static ConnectionFactory factory(RabbitMqSettings s) {
    ConnectionFactory f = new ConnectionFactory();
    f.setHost(s.uri().getHost());
    boolean tls = "amqps".equals(s.uri().getScheme());
    f.setPort(s.uri().getPort() > 0 ? s.uri().getPort() : tls ? 5671 : 5672);
    f.setVirtualHost(s.vhost());
    f.setUsername(s.username());
    f.setPassword(s.password());
    if (tls) {
      try {
        // The JVM's trust store, and the host name checked against the certificate.
        f.useSslProtocol(javax.net.ssl.SSLContext.getDefault());
        f.enableHostnameVerification();
      } catch (java.security.NoSuchAlgorithmException e) {
        throw new IllegalStateException("no TLS in this JVM", e);
      }
    }
    int timeout = (int) s.publishTimeout().toMillis();
    f.setConnectionTimeout(timeout);
    f.setHandshakeTimeout(timeout);
    f.setChannelRpcTimeout(timeout);
    f.setShutdownTimeout(timeout);
    f.setRequestedHeartbeat((int) Math.max(1, s.heartbeat().toSeconds()));
    f.setAutomaticRecoveryEnabled(true);
    f.setTopologyRecoveryEnabled(false);
    List<Long> backOff = new ArrayList<>();
    for (long ms = 100; ms < s.recoveryMaxInterval().toMillis(); ms *= 2) {
      backOff.add(ms);
    }
    backOff.add(s.recoveryMaxInterval().toMillis());
    f.setRecoveryDelayHandler(new RecoveryDelayHandler.ExponentialBackoffDelayHandler(backOff));
    return f;
  }

  /**
   * A new connection, recovering by itself once made. The first connect is not retried here: it
   * fails as a retriable error, and the caller's next call tries again.
   */
  Connection connect(String purpose) {
    try {
      return factory.newConnection("postbox-" + purpose);
    } catch (IOException | TimeoutException e) {
      throw RabbitMqErrors.map("connect to " + settings.uri(), e);
    }
  }

  /**
   * Makes sure the destination's shard queues and their retry queues exist as configured, once per
   * destination and broker: declares them ({@code declare=true}, idempotent, and refused by the
   * server when a queue exists with other arguments) or checks that they exist ({@code
   * declare=false}).
   *
   * @throws BrokerException permanent when a queue is missing or differs, retriable otherwise
   */
  void prepare(Connection connection, String destination) {
    if (prepared.contains(destination)) {
      return;
    }
    Channel ch = null;
    String queue = null;
    try {
      ch = connection.createChannel();
      for (int i = 0; i < shards.count(); i++) {
        for (String q :
            new String[] {
              Shards.queue(destination, i), Shards.retryQueue(Shards.queue(destination, i))
            }) {
          queue = q;
          if (settings.declare()) {
            ch.queueDeclare(
                queue, true, false, false, shards.arguments(Shards.majorVersion(connection)));
          } else {
            ch.queueDeclarePassive(queue);
          }
        }
      }
      prepared.add(destination);
    } catch (IOException | RuntimeException e) {
      int code = RabbitMqErrors.replyCode(e);
      String why =
          code == RabbitMqErrors.NOT_FOUND
              ? "queue '" + queue + "' does not exist, and declare=false"
              : code == RabbitMqErrors.PRECONDITION_FAILED
                  ? "queue '"
                      + queue
                      + "' exists with other arguments than queue.type="
                      + settings.queueType().argument()
                      + " asks for (see docs/brokers/rabbitmq.md)"
                  : "preparing the queues of '" + destination + "'";
      throw RabbitMqErrors.map(why, e);
    } finally {
      closeQuietly(ch);
    }
  }

  /** Forgets that a destination's queues were made ready: the next use declares them again. */
  void forget(String destination) {
    prepared.remove(destination);
  }

  Shards shards() {
    return shards;
  }

  @Override
  public String name() {
    return RabbitMqBrokerProvider.NAME;
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
    RabbitMqConsumer consumer =
        new RabbitMqConsumer(this, settings, subscription, consumers::remove);
    consumers.add(consumer);
    return consumer;
  }

  /** Opens and closes a connection, within {@code publish.timeout} at most. */
  @Override
  public void ping(Duration timeout) {
    checkOpen();
    Connection c;
    try {
      c = connect("ping");
    } catch (BrokerException e) {
      throw new RetriableBrokerException("rabbitmq did not answer: " + e.getMessage(), e);
    }
    try {
      c.close((int) Math.max(1, timeout.toMillis()));
    } catch (IOException | RuntimeException e) {
      LOG.log(Level.DEBUG, "closing the ping connection failed: " + e);
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
    consumers.forEach(RabbitMqConsumer::close);
    publisher.closeAll();
  }

  void checkOpen() {
    if (closed.get()) {
      throw new IllegalStateException("rabbitmq broker is closed");
    }
  }

  /**
   * Closes a channel, also one the server closed already: that unregisters it from its connection,
   * which would otherwise reopen it at every recovery.
   */
  static void closeQuietly(Channel ch) {
    if (ch != null) {
      try {
        ch.close();
      } catch (IOException | TimeoutException | RuntimeException e) {
        LOG.log(Level.DEBUG, "closing a channel failed (closed already?): " + e);
      }
    }
  }

  static void closeQuietly(Connection c) {
    if (c != null) {
      try {
        c.close();
      } catch (IOException | RuntimeException e) {
        LOG.log(Level.DEBUG, "closing a connection failed: " + e);
      }
    }
  }
}
