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
 * The consumer of one destination: it holds some of the destination's shard queues, each with its
 * retry queue on a channel of its own with a bounded prefetch, and acks manually.
 *
 * <p><b>Holding a shard.</b> A shard is held by the one connection that declared its lock, the
 * exclusive queue {@code <shard>.lock}: RabbitMQ refuses it to every other connection and deletes
 * it when its connection closes. (Quorum queues ignore an exclusive consumer's flag, so the
 * consumer alone would not keep a second instance out.)
 *
 * <p><b>Sharing the shards.</b> Every consumer of a destination also holds a consumer on the
 * destination's members queue, whose consumer count is how many share the work. Every {@code
 * claim.interval} a consumer takes free shards until it holds its fair share ({@code ceil(shards /
 * members)}), and gives back the ones above it. A shard is given back only when drained: its
 * deliveries are no longer handed out, every one handed out is settled, and every delayed copy made
 * from it has fallen due (its key is held behind it); then its channel is closed, which returns the
 * deliveries not handed out to the queue in their place, and its lock is freed. Until then no other
 * consumer can take it, so one key's events never reach two consumers at once, and a consumer that
 * dies gives its shards back with its connection.
 *
 * <p><b>Settling.</b> An ack is a {@code basic.ack} of exactly that delivery. A nack with delay
 * copies the message into one of the shard's wait queues ({@link RetryQueues}) on a connection of
 * the consumer's own for copies, waits for the server's confirm that it was routed, then acks the
 * original; a key's copies never come back in another order than they were nacked, and come back
 * through the shard's retry queue, which is handed out first. A nack without delay is copied to the
 * retry queue too: {@code basic.nack} with requeue puts the message behind a quorum queue's backlog
 * (RabbitMQ 3.10), and a classic queue's redelivered flag cannot count attempts. Settling a
 * delivery whose channel was lost does nothing: the server has returned it already.
 *
 * <p><b>Outages.</b> The connection recovers by itself; while it is down, {@link #poll} fails
 * retriably. Shards held on the lost connection are taken again after it recovers, and the consumer
 * is counted on the members queue again.
 */
final class RabbitMqConsumer implements Consumer {

  private static final System.Logger LOG = System.getLogger(RabbitMqConsumer.class.getName());
  private static final long SLICE_MS = 100;
  private static final long COPY_CONFIRM_MS = 5_000;

  private final RabbitMqBroker broker;
  private final RabbitMqSettings settings;
  private final Subscription subscription;
  private final java.util.function.Consumer<RabbitMqConsumer> onClose;
  private final Connection connection;
  private final int shardCount;
  private final int firstShard;
  private final Claim[] claims;

  /** Per shard, what outlives a lost claim in this consumer: see {@link ShardMemory}. */
  private final ShardMemory[] memory;

  private final LinkedBlockingQueue<RabbitMqDelivery> arrived = new LinkedBlockingQueue<>();

  /** Deliveries from the shards' retry queues: handed out before {@link #arrived}. */
  private final LinkedBlockingQueue<RabbitMqDelivery> retried = new LinkedBlockingQueue<>();

  private final AtomicInteger unsettled = new AtomicInteger();
  private final AtomicBoolean closed = new AtomicBoolean();
  private final boolean quorum;

  /** Poll thread only. */
  private Channel control;

  /** Locks of shards given back whose delete failed; poll thread only. */
  private final java.util.Set<String> orphanLocks = new java.util.HashSet<>();

  private Channel members;
  private volatile boolean membersCounted;
  private long nextBalanceNanos;

  /** Guarded by this. */
  private Connection copies;

  private record Due(long stepMillis, long dueMillis) {}

  /**
   * What this consumer remembers of a shard across a lost claim (a connection recovery), guarded by
   * itself: per key, the wait step and due time of its last delayed copy, and how many of its
   * copies are away (in a wait queue or the retry queue, not yet handed out again). While a key has
   * a copy away, its later events from the shard are not handed out but copied behind it: the inbox
   * holds a key behind its failed event only a few seconds past the due time, and a copy can be
   * later than that (a busy retry queue, a recovery).
   */
  private static final class ShardMemory {
    final Map<String, Due> lastDue = new HashMap<>();
    final Map<String, Integer> away = new HashMap<>();

    /** Per key: when its hold is given up, from the due time of its last nacked copy only. */
    final Map<String, Long> giveUpAt = new HashMap<>();

    long lastCopyDueMillis;

    /** Whether the key has a copy away that may still come back (one due long ago is given up). */
    boolean isAway(String key, long nowMillis) {
      Long until = giveUpAt.get(key);
      if (until != null && nowMillis >= until) {
        away.remove(key); // never came back here: held no longer
        giveUpAt.remove(key);
        return false;
      }
      return away.containsKey(key) && until != null;
    }

    void back(String key) {
      away.computeIfPresent(key, (k, n) -> n > 1 ? n - 1 : null);
    }

    synchronized void forget() {
      lastDue.clear();
      away.clear();
      giveUpAt.clear();
      lastCopyDueMillis = 0;
    }
  }

  /** How long after its due time a copy that has not come back stops holding its key. */
  private static final long AWAY_GIVE_UP_MS = 60_000;

  /** How long after a shard's last delayed copy fell due it is kept before it is given back. */
  private static final long COPY_MARGIN_MS = 2_000;

  /** How close two copies of a key may fall due from different wait queues. */
  private static final long DUE_MARGIN_MS = 1_000;

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
    this.memory = new ShardMemory[shardCount];
    for (int i = 0; i < shardCount; i++) {
      memory[i] = new ShardMemory();
    }
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
          // else: returned to the queue when its channel closes, or held back behind its key's copy
          if (d.claim().handsOut() && d.claim().admit(d)) {
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
    long now = System.currentTimeMillis();
    for (int i = 0; i < shardCount; i++) {
      Claim c = claims[i];
      if (c != null && (!c.alive || (c.draining && c.drained(now)))) {
        if (c.alive) {
          memory[i].forget(); // given back: the next holder takes the copies first
        }
        c.release();
        claims[i] = null;
      }
    }
    for (String lock : List.copyOf(orphanLocks)) {
      freeLock(lock);
    }
    joinMembers();
    Channel ctl = control();
    int memberCount;
    try {
      memberCount =
          Math.max(
              1,
              ctl.queueDeclarePassive(Shards.membersQueue(subscription.destination()))
                  .getConsumerCount());
    } catch (IOException | ShutdownSignalException e) {
      if (RabbitMqErrors.replyCode(e) == RabbitMqErrors.NOT_FOUND) {
        // Deleted under us: declared again at the next balance (with declare=true).
        broker.forget(subscription.destination());
        members = null;
        throw new RetriableBrokerException(
            "the queues of '" + subscription.destination() + "' were deleted; declaring them again",
            e);
      }
      throw e;
    }
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
        Claim c = tryClaim(i, Shards.queue(subscription.destination(), i));
        if (c != null) {
          claims[i] = c;
          held++;
        }
      }
    }
  }

  /**
   * The shard, or null when another consumer holds it. Taking a shard takes its lock first, an
   * exclusive queue {@code <shard>.lock}: RabbitMQ lets one connection at a time declare it
   * (another gets {@code RESOURCE_LOCKED}), and deletes it when that connection closes, so a
   * crashed holder's shards are free at once. Quorum queues ignore an exclusive consumer's flag, so
   * the lock, not the consumer, is the mutex.
   */
  private Claim tryClaim(int shard, String queue) throws IOException {
    Channel ch = connection.createChannel();
    Claim c = new Claim(shard, queue, ch);
    try {
      ch.queueDeclare(Shards.lockQueue(queue), false, true, false, null);
    } catch (IOException | ShutdownSignalException e) {
      int code = RabbitMqErrors.replyCode(e);
      RabbitMqBroker.closeQuietly(ch);
      if (code == RabbitMqErrors.RESOURCE_LOCKED || code == RabbitMqErrors.ACCESS_REFUSED) {
        return null; // held by another consumer
      }
      throw e;
    }
    try {
      ch.basicQos(Math.min(settings.prefetch(), subscription.maxInFlight()));
      // The retry queue goes with its shard, on the same channel: held, drained and given back
      // together. Consumed first, so that a new holder gets the copies a key is held behind before
      // the key's later events (one channel delivers in order).
      ch.basicConsume(Shards.retryQueue(queue), false, "", false, true, null, c.callback(retried));
      ch.basicConsume(queue, false, "", false, true, null, c.callback(arrived));
      return c;
    } catch (IOException | ShutdownSignalException e) {
      c.release();
      throw e;
    }
  }

  /**
   * Deletes a shard's lock; one that could not be deleted while the connection is open is tried
   * again at every balance, or the shard would stay locked for every other consumer.
   */
  private void freeLock(String lock) {
    try {
      control().queueDelete(lock);
      orphanLocks.remove(lock);
    } catch (IOException | RuntimeException e) {
      orphanLocks.add(lock);
      LOG.log(Level.DEBUG, "freeing " + lock + " failed; tried again: " + e);
    }
  }

  /** Keeps this consumer counted on the members queue, also after the connection recovered. */
  private void joinMembers() throws IOException {
    if (members != null && membersCounted) {
      return;
    }
    RabbitMqBroker.closeQuietly(members);
    members = null;
    Channel ch = connection.createChannel();
    String queue = Shards.membersQueue(subscription.destination());
    // Holds no messages; removed a day after its last consumer left.
    ch.queueDeclare(queue, true, false, false, Map.of("x-expires", 86_400_000));
    // A recovered channel comes back without its consumer (topology recovery is off): counted
    // again only by consuming again.
    ch.addShutdownListener(cause -> membersCounted = false);
    ch.basicConsume(queue, true, new DefaultConsumer(ch));
    members = ch;
    membersCounted = true;
  }

  private Channel control() throws IOException {
    if (control == null || !control.isOpen()) {
      RabbitMqBroker.closeQuietly(control);
      control = connection.createChannel();
    }
    return control;
  }

  /** The connection delayed copies are published on; not the consumer's, which a block stalls. */
  private synchronized Connection copies() {
    if (closed.get()) {
      throw new IllegalStateException("rabbitmq consumer is closed");
    }
    if (copies == null) {
      copies = broker.connect("retries-" + subscription.group());
    }
    return copies;
  }

  Duration maxNackDelay() {
    return settings.maxNackDelay();
  }

  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    try {
      arrived.clear();
      retried.clear();
      // Acks already sent travel before the close; every unacked delivery goes back to its queue,
      // and the shards' locks go with the connection.
      RabbitMqBroker.closeQuietly(connection);
      synchronized (this) {
        RabbitMqBroker.closeQuietly(copies);
      }
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

    /** The shard's memory; also guards the copy channel. */
    private final ShardMemory copyLock;

    private Channel copyChannel;
    private volatile boolean copyInterrupted;
    private volatile boolean copyReturned;

    Claim(int shard, String queue, Channel channel) {
      this.copyLock = memory[shard];
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
                    quorum,
                    into == retried));
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

    /**
     * Whether a draining shard can be given back: every delivery handed out is settled, and every
     * delayed copy made from it is back (due, plus a margin), so the next holder cannot take a
     * key's later event before the copy the inbox holds the key behind.
     */
    boolean drained(long nowMillis) {
      long lastDue;
      synchronized (copyLock) {
        lastDue = copyLock.lastCopyDueMillis;
      }
      return outstanding.get() == 0 && nowMillis >= lastDue + COPY_MARGIN_MS;
    }

    /**
     * Closes the channel, which returns the deliveries not handed out to the queue in their place,
     * then frees the lock.
     */
    void release() {
      alive = false;
      RabbitMqBroker.closeQuietly(channel);
      synchronized (copyLock) {
        RabbitMqBroker.closeQuietly(copyChannel);
      }
      if (connection.isOpen()) {
        freeLock(Shards.lockQueue(queue));
      }
    }

    /**
     * Copies a delivery into the wait queue for its delay (or for no delay into the retry queue),
     * and returns once the server confirmed the copy as routed.
     */
    private void copy(RabbitMqDelivery d, Duration delay, int priorAttempts, boolean nacked)
        throws IOException, InterruptedException, TimeoutException {
      synchronized (copyLock) {
        if (copyChannel == null || !copyChannel.isOpen()) {
          RabbitMqBroker.closeQuietly(copyChannel);
          Channel ch = copies().createChannel();
          ch.confirmSelect();
          ch.addShutdownListener(cause -> copyInterrupted = true);
          ch.addReturnListener(r -> copyReturned = true);
          copyChannel = ch;
        }
        copyInterrupted = false;
        copyReturned = false;
        AMQP.BasicProperties props = AmqpHeaders.copy(d.props(), priorAttempts);
        long now = System.currentTimeMillis();
        String target;
        long step = 0;
        String key = d.keyOrNull();
        Due last = key == null ? null : copyLock.lastDue.get(key);
        if (delay.isZero()) {
          target = Shards.retryQueue(queue);
        } else {
          step = RetryQueues.stepMillis(delay);
          if (last != null && now < last.dueMillis() + DUE_MARGIN_MS) {
            if (step <= last.stepMillis()) {
              // Behind the key's earlier copy in the same wait queue: FIFO, so after it.
              step = last.stepMillis();
            } else {
              // Another wait queue: due clearly after the earlier copy, never a race of timers.
              while (now + step < last.dueMillis() + DUE_MARGIN_MS
                  && step < RetryQueues.LONGEST_DELAY.toMillis()) {
                step = RetryQueues.nextStepMillis(step);
              }
            }
          }
          target = RetryQueues.waitQueue(queue, step);
          copyChannel.queueDeclare(
              target, true, false, false, RetryQueues.arguments(queue, step, settings));
        }
        copyChannel.basicPublish("", target, true, props, d.body());
        copyChannel.waitForConfirmsOrDie(
            Math.min(settings.publishTimeout().toMillis(), COPY_CONFIRM_MS));
        if (copyInterrupted || copyReturned) {
          throw new IOException(
              "the copy to " + target + " was " + (copyReturned ? "unroutable" : "interrupted"));
        }
        long due = now + step;
        copyLock.lastCopyDueMillis = Math.max(copyLock.lastCopyDueMillis, due);
        if (key != null) {
          if (copyLock.lastDue.size() > 10_000) {
            copyLock.lastDue.values().removeIf(x -> x.dueMillis() + AWAY_GIVE_UP_MS < now);
            copyLock.away.keySet().retainAll(copyLock.lastDue.keySet());
            copyLock.giveUpAt.keySet().retainAll(copyLock.lastDue.keySet());
          }
          Due before = copyLock.lastDue.get(key);
          copyLock.lastDue.put(
              key, new Due(step, before == null ? due : Math.max(before.dueMillis(), due)));
          copyLock.away.merge(key, 1, Integer::sum);
          if (nacked) {
            copyLock.giveUpAt.put(key, due + AWAY_GIVE_UP_MS);
          }
        }
      }
    }

    Duration maxNackDelay() {
      return settings.maxNackDelay();
    }

    /**
     * Whether a delivery may be handed out: a copy back from a delay may, and so may the shard's
     * events of keys without a copy away. A later event of a key whose copy is away is copied
     * behind that copy and acked instead (not counted as an attempt), or, if that fails, returned
     * to the queue.
     */
    boolean admit(RabbitMqDelivery d) {
      String key = d.keyOrNull();
      if (key == null) {
        return true;
      }
      synchronized (copyLock) {
        if (d.fromRetry()) {
          copyLock.back(key);
          return true;
        }
        if (!copyLock.isAway(key, System.currentTimeMillis())) {
          return true;
        }
      }
      try {
        copy(d, Duration.ofMillis(1), Math.max(0, d.attempt() - 1), false);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return true; // handed out: the inbox holds the key behind its failed event
      } catch (IOException | TimeoutException | RuntimeException e) {
        // Handed out rather than requeued (behind a quorum queue's backlog): the inbox holds the
        // key behind its failed event.
        LOG.log(Level.WARNING, "holding " + d + " behind its key's copy failed; handed out: " + e);
        return true;
      }
      try {
        channel.basicAck(d.tag(), false);
      } catch (IOException | RuntimeException e) {
        LOG.log(Level.DEBUG, "acking held " + d + " failed; redelivered with its channel: " + e);
      }
      return false;
    }

    private void requeue(RabbitMqDelivery d) {
      try {
        channel.basicNack(d.tag(), false, true);
      } catch (IOException | RuntimeException e) {
        LOG.log(Level.DEBUG, "requeueing " + d + " failed; returned with its channel: " + e);
      }
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
        // Never basic.nack with requeue, not even without delay: on a quorum queue (3.10) the
        // message goes behind the queue's backlog, behind the key's later events. A copy to the
        // retry queue, served first, keeps the key's order and counts the attempt.
        try {
          copy(d, delay, d.attempt(), true);
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
