package dev.postbox.broker.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.ShutdownSignalException;
import dev.postbox.spi.BrokerException;
import dev.postbox.spi.Consumer;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.RetriableBrokerException;
import dev.postbox.spi.Subscription;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The consumer of one destination: it holds some of the destination's shard queues, each with an
 * exclusive consumer on a channel of its own with a bounded prefetch, and acks manually.
 *
 * <p><b>Sharing the shards.</b> Every consumer of a destination also holds a consumer on the
 * destination's members queue, whose consumer count is how many share the work. Every {@code
 * claim.interval} a consumer takes free shards until it holds its fair share ({@code ceil(shards /
 * members)}), and gives back the ones above it. A shard is given back only when drained: its
 * deliveries are no longer handed out, and once every one handed out is settled, its channel is
 * closed, which returns the ones not handed out to the queue in their place. Until then no other
 * consumer can take it, so one key's events never reach two consumers at once, and a consumer that
 * dies gives its shards back with its connection.
 *
 * <p><b>Settling.</b> An ack is a {@code basic.ack} of exactly that delivery. A nack with delay
 * copies the message into one of the shard's wait queues ({@link RetryQueues}), waits for the
 * server's confirm, then acks the original; a key's copies never come back in another order than
 * they were nacked, and come back through the shard's retry queue, which is handed out first. A
 * nack without delay returns the message to its place in a quorum queue; on a classic queue, whose
 * redelivered flag cannot count attempts, it is copied to the shard's retry queue. Settling a
 * delivery whose channel was lost does nothing: the server has returned it already.
 *
 * <p><b>Outages.</b> The connection recovers by itself; while it is down, {@link #poll} fails
 * retriably. Shards held on the lost connection are taken again after it recovers.
 */
final class RabbitMqConsumer implements Consumer {

  private static final System.Logger LOG = System.getLogger(RabbitMqConsumer.class.getName());
  private static final long SLICE_MS = 100;

  private final RabbitMqBroker broker;
  private final RabbitMqSettings settings;
  private final Subscription subscription;
  private final java.util.function.Consumer<RabbitMqConsumer> onClose;
  private final Connection connection;
  private final int shardCount;
  private final int firstShard;
  private final Claim[] claims;
  private final int[] refusedWhileFree;
  private final LinkedBlockingQueue<RabbitMqDelivery> arrived = new LinkedBlockingQueue<>();

  /** Deliveries from the shards' retry queues: handed out before {@link #arrived}. */
  private final LinkedBlockingQueue<RabbitMqDelivery> retried = new LinkedBlockingQueue<>();

  private final AtomicInteger unsettled = new AtomicInteger();
  private final AtomicBoolean closed = new AtomicBoolean();
  private final boolean quorum;

  /** Guards the retry channel and the keys' due times. */
  private final Object retryLock = new Object();

  private Channel retries;

  /** Per shard queue and key: the wait step and due time of its last delayed copy. */
  private final Map<String, Due> lastDueByKey = new HashMap<>();

  /** Poll thread only. */
  private Channel control;

  private Channel members;
  private long nextBalanceNanos;

  private record Due(long stepMillis, long dueMillis) {}

  RabbitMqConsumer(
      RabbitMqBroker broker,
      RabbitMqSettings settings,
      Subscription subscription,
      java.util.function.Consumer<RabbitMqConsumer> onClose) {
    this.broker = broker;
    this.settings = settings;
    this.subscription = subscription;
    this.onClose = onClose;
    this.shardCount = settings.shards();
    this.claims = new Claim[shardCount];
    this.refusedWhileFree = new int[shardCount];
    this.firstShard = ThreadLocalRandom.current().nextInt(shardCount);
    this.quorum = settings.queueType() == RabbitMqSettings.QueueType.QUORUM;
    this.connection = broker.connect("consumer-" + subscription.group());
    try {
      broker.prepare(connection, subscription.destination());
      joinMembers(); // counted at once, so consumers subscribed together share from the start
    } catch (IOException | RuntimeException e) {
      RabbitMqBroker.closeQuietly(connection);
      throw e instanceof BrokerException b
          ? b
          : RabbitMqErrors.map("subscribe to " + subscription.destination(), e);
    }
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
    List<Delivery> out = new ArrayList<>();
    try {
      balanceIfDue();
      while (true) {
        checkOpen();
        int room = Math.min(maxDeliveries, subscription.maxInFlight() - unsettled.get());
        room -= out.size();
        long remainingMs = Math.max(0, (deadline - System.nanoTime()) / 1_000_000);
        if (room <= 0) {
          if (!out.isEmpty() || remainingMs == 0) {
            return out;
          }
          TimeUnit.MILLISECONDS.sleep(Math.min(remainingMs, 10));
          continue;
        }
        // Copies back from a delay first: their keys are held until they are back.
        RabbitMqDelivery d = retried.poll();
        if (d == null) {
          d =
              out.isEmpty() && remainingMs > 0
                  ? arrived.poll(Math.min(remainingMs, SLICE_MS), TimeUnit.MILLISECONDS)
                  : arrived.poll();
        }
        if (d != null) {
          if (d.claim().handsOut()) { // else: returned to the queue when its channel closes
            d.claim().outstanding.incrementAndGet();
            unsettled.incrementAndGet();
            out.add(d);
          }
          continue;
        }
        if (!out.isEmpty() || System.nanoTime() >= deadline) {
          return out;
        }
        balanceIfDue();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return out;
    } catch (IOException | RuntimeException e) {
      if (closed.get()) {
        return List.of();
      }
      if (!out.isEmpty()) {
        return out; // handed out already: the failure shows again at the next poll
      }
      throw e instanceof BrokerException b
          ? b
          : RabbitMqErrors.map("poll " + subscription.destination(), e);
    }
  }

  private void balanceIfDue() throws IOException {
    if (!connection.isOpen()) {
      throw new RetriableBrokerException(
          "the connection to rabbitmq is down (recovering): " + connection.getCloseReason());
    }
    if (System.nanoTime() - nextBalanceNanos < 0) {
      return;
    }
    balance();
    nextBalanceNanos = System.nanoTime() + settings.claimInterval().toNanos();
  }

  /** Drops lost shards, gives back drained ones, and takes or gives up shards to the fair share. */
  private void balance() throws IOException {
    for (int i = 0; i < shardCount; i++) {
      Claim c = claims[i];
      if (c != null && (!c.alive || (c.draining && c.outstanding.get() == 0))) {
        RabbitMqBroker.closeQuietly(c.channel);
        claims[i] = null;
      }
    }
    joinMembers();
    Channel ctl = control();
    int memberCount =
        Math.max(
            1,
            ctl.queueDeclarePassive(Shards.membersQueue(subscription.destination()))
                .getConsumerCount());
    int fair = (shardCount + memberCount - 1) / memberCount;
    int held = 0;
    for (Claim c : claims) {
      if (c != null && !c.draining) {
        held++;
      }
    }
    for (int i = shardCount - 1; i >= 0 && held > fair; i--) {
      if (claims[i] != null && !claims[i].draining) {
        claims[i].draining = true; // for good: its skipped deliveries go back when it closes
        held--;
      }
    }
    for (int k = 0; k < shardCount && held < fair; k++) {
      int i = (firstShard + k) % shardCount;
      if (claims[i] == null) {
        String queue = Shards.queue(subscription.destination(), i);
        if (ctl.queueDeclarePassive(queue).getConsumerCount() == 0) {
          Claim c = tryClaim(i, queue);
          if (c != null) {
            claims[i] = c;
            held++;
            refusedWhileFree[i] = 0;
          } else if (++refusedWhileFree[i] == 5) {
            LOG.log(
                Level.WARNING,
                "queue '"
                    + queue
                    + "' keeps refusing an exclusive consumer though it has none: was it declared"
                    + " by someone else with arguments the adapter does not use (a classic queue"
                    + " with x-single-active-consumer)? See docs/brokers/rabbitmq.md");
          }
        }
      }
    }
  }

  /** An exclusive consumer on the shard, or null when another consumer got there first. */
  private Claim tryClaim(int shard, String queue) throws IOException {
    Channel ch = connection.createChannel();
    Claim c = new Claim(shard, queue, ch);
    try {
      ch.basicQos(Math.min(settings.prefetch(), subscription.maxInFlight()));
      ch.basicConsume(queue, false, "", false, true, null, c.callback(arrived));
      // The retry queue goes with its shard, on the same channel: held, drained and given back
      // together.
      ch.basicConsume(Shards.retryQueue(queue), false, "", false, true, null, c.callback(retried));
      return c;
    } catch (IOException | ShutdownSignalException e) {
      int code = RabbitMqErrors.replyCode(e);
      RabbitMqBroker.closeQuietly(ch);
      if (code == RabbitMqErrors.ACCESS_REFUSED || code == RabbitMqErrors.RESOURCE_LOCKED) {
        return null; // taken meanwhile
      }
      throw e;
    }
  }

  /** Keeps this consumer counted on the members queue. */
  private void joinMembers() throws IOException {
    if (members != null && members.isOpen()) {
      return;
    }
    RabbitMqBroker.closeQuietly(members);
    members = null;
    Channel ch = connection.createChannel();
    String queue = Shards.membersQueue(subscription.destination());
    // Holds no messages; removed a day after its last consumer left.
    ch.queueDeclare(queue, true, false, false, Map.of("x-expires", 86_400_000));
    ch.basicConsume(queue, true, new DefaultConsumer(ch));
    members = ch;
  }

  private Channel control() throws IOException {
    if (control == null || !control.isOpen()) {
      control = connection.createChannel();
    }
    return control;
  }

  Duration maxNackDelay() {
    return settings.maxNackDelay();
  }

  /**
   * Copies a delivery into the wait queue for its delay (or for no delay to the shard's tail), and
   * returns once the server confirmed the copy.
   */
  private void copy(Claim claim, RabbitMqDelivery d, Duration delay)
      throws IOException, InterruptedException, TimeoutException {
    synchronized (retryLock) {
      if (retries == null || !retries.isOpen()) {
        retries = connection.createChannel();
        retries.confirmSelect();
      }
      AMQP.BasicProperties props = AmqpHeaders.copy(d.props(), d.attempt());
      if (delay.isZero()) {
        retries.basicPublish("", Shards.retryQueue(claim.queue), false, props, d.body());
        retries.waitForConfirmsOrDie(settings.publishTimeout().toMillis());
        return;
      }
      long now = System.currentTimeMillis();
      long step = RetryQueues.stepMillis(delay);
      String key = d.keyOrNull();
      String byKey = key == null ? null : claim.queue + '\n' + key;
      Due last = byKey == null ? null : lastDueByKey.get(byKey);
      if (last != null && now + step < last.dueMillis()) {
        // Behind the key's earlier copy in the same wait queue: FIFO, so it comes back after it.
        step = last.stepMillis();
      }
      String wait = RetryQueues.waitQueue(claim.queue, step);
      retries.queueDeclare(wait, true, false, false, RetryQueues.arguments(claim.queue, step));
      retries.basicPublish("", wait, false, props, d.body());
      retries.waitForConfirmsOrDie(settings.publishTimeout().toMillis());
      if (byKey != null) {
        if (lastDueByKey.size() > 10_000) {
          lastDueByKey.values().removeIf(due -> due.dueMillis() < now);
        }
        lastDueByKey.put(byKey, new Due(step, now + step));
      }
    }
  }

  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    try {
      arrived.clear();
      retried.clear();
      // Acks already sent travel before the close; every unacked delivery goes back to its queue.
      RabbitMqBroker.closeQuietly(connection);
    } finally {
      onClose.accept(this);
    }
  }

  private void checkOpen() {
    if (closed.get()) {
      throw new IllegalStateException("rabbitmq consumer is closed");
    }
  }

  /** One shard held: its channel, whether it is still live, and whether it is being given back. */
  final class Claim {
    private final int shard;
    private final String queue;
    private final Channel channel;
    private volatile boolean alive = true;
    private volatile boolean draining;
    private final AtomicInteger outstanding = new AtomicInteger();

    Claim(int shard, String queue, Channel channel) {
      this.shard = shard;
      this.queue = queue;
      this.channel = channel;
      channel.addShutdownListener(cause -> alive = false);
    }

    DefaultConsumer callback(LinkedBlockingQueue<RabbitMqDelivery> into) {
      return new DefaultConsumer(channel) {
        @Override
        public void handleDelivery(
            String consumerTag, Envelope envelope, AMQP.BasicProperties properties, byte[] body) {
          if (alive && !closed.get()) {
            into.add(
                new RabbitMqDelivery(
                    Claim.this,
                    envelope.getDeliveryTag(),
                    envelope.isRedeliver(),
                    properties,
                    body,
                    quorum));
          }
        }

        @Override
        public void handleCancel(String consumerTag) {
          alive = false; // the queue was deleted: the server cancelled the consumer
        }
      };
    }

    String queue() {
      return queue;
    }

    Duration maxNackDelay() {
      return settings.maxNackDelay();
    }

    boolean handsOut() {
      return alive && !draining && !closed.get();
    }

    void ack(RabbitMqDelivery d) {
      try {
        if (alive) {
          channel.basicAck(d.tag(), false);
        }
      } catch (IOException | RuntimeException e) {
        LOG.log(Level.WARNING, "acking " + d + " failed; it will be redelivered: " + e);
      } finally {
        settledOne();
      }
    }

    void nack(RabbitMqDelivery d, Duration delay) {
      try {
        if (!alive) {
          return; // the server has returned it already
        }
        if (delay.isZero() && quorum) {
          channel.basicNack(d.tag(), false, true);
          return;
        }
        try {
          copy(this, d, delay);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          channel.basicNack(d.tag(), false, true);
          return;
        } catch (IOException | TimeoutException | RuntimeException e) {
          LOG.log(
              Level.WARNING,
              "delaying " + d + " failed; it goes back to its queue without delay: " + e);
          channel.basicNack(d.tag(), false, true);
          return;
        }
        channel.basicAck(d.tag(), false);
      } catch (IOException | RuntimeException e) {
        LOG.log(Level.WARNING, "nacking " + d + " failed; it will be redelivered: " + e);
      } finally {
        settledOne();
      }
    }

    private void settledOne() {
      outstanding.decrementAndGet();
      unsettled.decrementAndGet();
    }

    @Override
    public String toString() {
      return "Claim[" + queue + ", shard " + shard + "]";
    }
  }
}
