package dev.postbox.broker.kafka;

import dev.postbox.spi.Consumer;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.PermanentBrokerException;
import dev.postbox.spi.RetriableBrokerException;
import dev.postbox.spi.Subscription;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.WakeupException;

/**
 * A Kafka group member with per-delivery acks on top of cumulative offsets.
 *
 * <p>{@link KafkaConsumer} is single-threaded, so acks and nacks from any thread are queued and
 * applied by the polling thread at its next poll (or at close). Per partition, the commit point is
 * the lowest offset still unacked ({@link PartitionProgress}), so an ack out of order never commits
 * past an unacked delivery. A nack rewinds its partition to the nacked offset and pauses it for the
 * delay: the message and its successors come back in order, and no other partition waits. On a
 * rebalance, revoked partitions commit what is contiguously acked and their in-flight deliveries
 * are dropped; late settlements of those deliveries are ignored.
 */
final class KafkaSubscriptionConsumer implements Consumer {

  private static final System.Logger LOG =
      System.getLogger(KafkaSubscriptionConsumer.class.getName());
  private static final Duration MAX_POLL_SLICE = Duration.ofMillis(100);
  private static final Duration COMMIT_TIMEOUT = Duration.ofSeconds(10);

  private final Subscription subscription;
  private final Duration maxNackDelay;
  private final KafkaConsumer<byte[], byte[]> kafka;
  private final java.util.function.Consumer<KafkaSubscriptionConsumer> onClose;

  /** The consumer's {@code group.instance.id}, or null for a dynamic member. */
  final String staticId;

  private final java.util.function.Consumer<KafkaSubscriptionConsumer> onFenced;

  private final ReentrantLock clientLock = new ReentrantLock();
  private final ConcurrentLinkedQueue<Settlement> settlements = new ConcurrentLinkedQueue<>();
  private final AtomicBoolean closed = new AtomicBoolean();

  // Confined to the thread holding clientLock.
  private final Map<TopicPartition, PartitionState> partitions = new HashMap<>();
  private final ArrayDeque<ConsumerRecord<byte[], byte[]>> buffer = new ArrayDeque<>();
  private final Map<TopicPartition, TreeMap<Long, Integer>> attempts = new HashMap<>();
  private final Set<TopicPartition> dirty = new HashSet<>();

  KafkaSubscriptionConsumer(
      KafkaSettings settings,
      Subscription subscription,
      String clientSuffix,
      String staticId,
      java.util.function.Consumer<KafkaSubscriptionConsumer> onFenced,
      java.util.function.Consumer<KafkaSubscriptionConsumer> onClose) {
    this.staticId = staticId;
    this.onFenced = onFenced;
    this.subscription = subscription;
    this.maxNackDelay = settings.maxNackDelay();
    this.onClose = onClose;
    try {
      this.kafka =
          new KafkaConsumer<>(
              settings.consumerPropertiesFor(subscription.group(), clientSuffix, staticId));
    } catch (KafkaException e) {
      throw KafkaErrors.map("subscribe to " + subscription.destination(), e);
    }
    kafka.subscribe(List.of(subscription.destination()), new Rebalances());
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
    clientLock.lock();
    try {
      while (true) {
        checkOpen();
        applySettlements();
        resumeDueNacks();
        commitProgress();
        int room = Math.min(maxDeliveries, subscription.maxInFlight() - inFlightCount());
        if (room > 0 && !buffer.isEmpty()) {
          return handOut(room);
        }
        long remaining = deadline - System.nanoTime();
        Duration slice =
            Duration.ofNanos(Math.max(0, Math.min(remaining, MAX_POLL_SLICE.toNanos())));
        fetch(slice, room > 0);
        if (room > 0 && !buffer.isEmpty()) {
          return handOut(room);
        }
        if (System.nanoTime() >= deadline) {
          return List.of();
        }
      }
    } catch (WakeupException closing) {
      return List.of();
    } finally {
      clientLock.unlock();
    }
  }

  /**
   * Polls Kafka. With no room for deliveries it still polls, with every partition paused, so the
   * member keeps its place in the group and rebalance callbacks still run.
   */
  private void fetch(Duration wait, boolean wantRecords) {
    Set<TopicPartition> pausedForFlowControl = new HashSet<>();
    if (!wantRecords) {
      for (TopicPartition tp : kafka.assignment()) {
        if (!kafka.paused().contains(tp)) {
          pausedForFlowControl.add(tp);
        }
      }
      kafka.pause(pausedForFlowControl);
    }
    try {
      for (ConsumerRecord<byte[], byte[]> r : kafka.poll(wait)) {
        PartitionState state = partitions.get(new TopicPartition(r.topic(), r.partition()));
        if (state != null) {
          state.fetchedAny = true;
          buffer.add(r);
        }
      }
    } catch (WakeupException e) {
      throw e;
    } catch (AuthorizationException | AuthenticationException | InvalidTopicException e) {
      throw new PermanentBrokerException(
          "poll " + subscription.destination() + ": " + e.getMessage(), e);
    } catch (org.apache.kafka.common.errors.FencedInstanceIdException e) {
      onFenced.accept(this); // the next subscription of this group joins as a dynamic member
      throw KafkaErrors.map("poll " + subscription.destination(), e);
    } catch (KafkaException e) {
      throw new RetriableBrokerException(
          "poll " + subscription.destination() + ": " + e.getMessage(), e);
    } finally {
      if (!pausedForFlowControl.isEmpty()) {
        pausedForFlowControl.retainAll(kafka.assignment());
        kafka.resume(pausedForFlowControl);
      }
    }
  }

  private List<Delivery> handOut(int room) {
    List<Delivery> out = new ArrayList<>(room);
    while (out.size() < room && !buffer.isEmpty()) {
      ConsumerRecord<byte[], byte[]> r = buffer.poll();
      TopicPartition tp = new TopicPartition(r.topic(), r.partition());
      PartitionState state = partitions.get(tp);
      if (state == null) {
        continue; // revoked while buffered; the new owner reads it
      }
      int attempt =
          attempts.computeIfAbsent(tp, x -> new TreeMap<>()).merge(r.offset(), 1, Integer::sum);
      KafkaDelivery d = new KafkaDelivery(this, state, r, attempt);
      state.progress.delivered(r.offset(), d);
      out.add(d);
    }
    return out;
  }

  Duration maxNackDelay() {
    return maxNackDelay;
  }

  /** Called by deliveries, from any thread. */
  void settle(Settlement settlement) {
    if (!closed.get()) {
      settlements.add(settlement);
    }
  }

  private void applySettlements() {
    Settlement s;
    while ((s = settlements.poll()) != null) {
      KafkaDelivery d = s.delivery();
      PartitionState state = d.state();
      if (state.revoked || partitions.get(state.tp) != state) {
        continue; // a late settlement of a revoked partition: its new owner redelivers
      }
      if (!state.progress.settle(d.offset(), d)) {
        continue; // stale: rewound by an earlier nack
      }
      dirty.add(state.tp);
      if (!s.ack()) {
        rewind(state, d.offset(), s.atNanos() + s.delay().toNanos());
      }
    }
  }

  private void rewind(PartitionState state, long offset, long resumeAtNanos) {
    state.progress.rewindTo(offset);
    buffer.removeIf(
        r ->
            r.partition() == state.tp.partition()
                && r.topic().equals(state.tp.topic())
                && r.offset() >= offset);
    kafka.seek(state.tp, offset);
    kafka.pause(List.of(state.tp));
    state.resumeAtNanos = Math.max(state.resumeAtNanos, resumeAtNanos);
  }

  private void resumeDueNacks() {
    long now = System.nanoTime();
    for (PartitionState state : partitions.values()) {
      if (state.resumeAtNanos != Long.MIN_VALUE && now - state.resumeAtNanos >= 0) {
        state.resumeAtNanos = Long.MIN_VALUE;
        kafka.resume(List.of(state.tp));
      }
    }
  }

  private void commitProgress() {
    if (dirty.isEmpty()) {
      return;
    }
    Map<TopicPartition, OffsetAndMetadata> offsets = commitPoints(dirty, false);
    dirty.clear();
    if (!offsets.isEmpty()) {
      kafka.commitAsync(
          offsets,
          (done, failure) -> {
            if (failure != null) {
              // The next commit, or the one at close, covers it; the worst case is redelivery.
              LOG.log(Level.DEBUG, "async offset commit failed: {0}", failure.toString());
            }
          });
    }
  }

  private Map<TopicPartition, OffsetAndMetadata> commitPoints(
      Collection<TopicPartition> tps, boolean force) {
    Map<TopicPartition, Long> firstBuffered = new HashMap<>();
    for (ConsumerRecord<byte[], byte[]> r : buffer) {
      firstBuffered.putIfAbsent(new TopicPartition(r.topic(), r.partition()), r.offset());
    }
    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
    for (TopicPartition tp : tps) {
      PartitionState state = partitions.get(tp);
      if (state == null || !state.fetchedAny) {
        continue; // nothing read yet: nothing to commit, and position() would block
      }
      long nextUnread =
          Math.min(kafka.position(tp), firstBuffered.getOrDefault(tp, Long.MAX_VALUE));
      long point = state.progress.commitPoint(nextUnread);
      if (state.progress.advanceTo(point) || force) {
        offsets.put(tp, new OffsetAndMetadata(point));
        attempts.computeIfAbsent(tp, x -> new TreeMap<>()).headMap(point).clear();
      }
    }
    return offsets;
  }

  private void commitNow(Collection<TopicPartition> tps) {
    Map<TopicPartition, OffsetAndMetadata> offsets = commitPoints(tps, true);
    if (offsets.isEmpty()) {
      return;
    }
    for (int attempt = 0; attempt < 2; attempt++) {
      try {
        kafka.commitSync(offsets, COMMIT_TIMEOUT);
        return;
      } catch (WakeupException e) {
        // close() woke us up; try once more, the wake-up is consumed now
      } catch (KafkaException e) {
        LOG.log(
            Level.WARNING,
            "offset commit failed, deliveries after " + offsets + " may be redelivered: " + e);
        return;
      }
    }
  }

  private int inFlightCount() {
    int n = 0;
    for (PartitionState state : partitions.values()) {
      n += state.progress.inFlightCount();
    }
    return n;
  }

  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    kafka.wakeup();
    clientLock.lock();
    try {
      try {
        applySettlements();
        commitNow(new ArrayList<>(partitions.keySet()));
      } catch (RuntimeException e) {
        LOG.log(
            Level.WARNING, "final offset commit failed; unacked work will be redelivered: " + e);
      }
      try {
        // A static member that closes leaves its group at once, as a dynamic one does: only a
        // crashed member keeps its partitions, for its restart to take back without a rebalance.
        kafka.close(
            CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
                .withTimeout(Duration.ofSeconds(10)));
      } catch (RuntimeException e) {
        LOG.log(Level.WARNING, "closing the kafka consumer failed: " + e);
      }
    } finally {
      clientLock.unlock();
      onClose.accept(this);
    }
  }

  private void checkOpen() {
    if (closed.get()) {
      throw new IllegalStateException("kafka consumer is closed");
    }
  }

  /** A settlement waiting for the poll thread. */
  record Settlement(KafkaDelivery delivery, boolean ack, long atNanos, Duration delay) {}

  /** A partition as this member holds it. A new object per assignment. */
  static final class PartitionState {
    final TopicPartition tp;
    final PartitionProgress<KafkaDelivery> progress = new PartitionProgress<>();
    long resumeAtNanos = Long.MIN_VALUE;
    boolean fetchedAny;
    boolean revoked;

    PartitionState(TopicPartition tp) {
      this.tp = tp;
    }
  }

  /** Runs inside {@link KafkaConsumer#poll} on the polling thread, so under the client lock. */
  private final class Rebalances implements ConsumerRebalanceListener {
    @Override
    public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
      applySettlements();
      commitNow(revoked);
      drop(revoked);
    }

    @Override
    public void onPartitionsLost(Collection<TopicPartition> lost) {
      drop(lost); // no commit: another member may own them already
    }

    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
      for (TopicPartition tp : assigned) {
        partitions.put(tp, new PartitionState(tp));
      }
    }

    private void drop(Collection<TopicPartition> tps) {
      for (TopicPartition tp : tps) {
        PartitionState state = partitions.remove(tp);
        if (state != null) {
          state.revoked = true;
        }
        dirty.remove(tp);
      }
      Iterator<ConsumerRecord<byte[], byte[]>> it = buffer.iterator();
      while (it.hasNext()) {
        ConsumerRecord<byte[], byte[]> r = it.next();
        if (tps.contains(new TopicPartition(r.topic(), r.partition()))) {
          it.remove();
        }
      }
    }
  }
}
