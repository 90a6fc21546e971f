package dev.postbox.spi.testing;

import dev.postbox.spi.Broker;
import dev.postbox.spi.Capabilities;
import dev.postbox.spi.Consumer;
import dev.postbox.spi.Deliveries;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.InvalidEventException;
import dev.postbox.spi.KeyedBatch;
import dev.postbox.spi.Publisher;
import dev.postbox.spi.RetriableBrokerException;
import dev.postbox.spi.Subscription;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * An in-memory broker that implements the SPI's semantics exactly, for unit tests of code that uses
 * the SPI. It lives in the test-jar, never on a production class path.
 *
 * <p>Model: each destination is a log; each consumer group has its own state per entry (available
 * at a time, in flight to one consumer, or acked). Envelopes with the same key behave like a JMS
 * message group: while one of them is unsettled, later ones go only to the consumer that holds it,
 * in log order; a nacked one blocks its successors until it is redelivered.
 *
 * <p>{@link Fault}s break one promise each, so that tests can prove the conformance kit catches
 * that breach.
 */
public final class ReferenceBroker implements Broker {

  /** One deliberate breach of the SPI contract each. */
  public enum Fault {
    /** Headers are lost in transit. */
    DROP_HEADERS,
    /** An acked delivery comes back. */
    REDELIVER_AFTER_ACK,
    /** Closing a consumer acks what it held, so unacked deliveries are lost. */
    LOSE_UNACKED_ON_CLOSE,
    /** A nack redelivers at once, whatever its delay. */
    IGNORE_NACK_DELAY,
    /** Deliveries come newest first, ignoring keys. */
    REVERSE_ORDER,
    /** publishAll silently drops the last envelope. */
    DROP_BATCH_TAIL,
    /** Unsettled deliveries are handed to other consumers of the group too. */
    SHARE_IN_FLIGHT,
    /** An ack also acks every earlier delivery of the consumer, like a careless offset commit. */
    ACK_IS_CUMULATIVE,
    /** No size limit is enforced. */
    ACCEPT_OVERSIZED,
    /** When unreachable, publishing blocks forever instead of failing. */
    HANG_WHEN_UNREACHABLE,
    /** The attempt count stays 1. */
    FROZEN_ATTEMPTS,
    /** maxInFlight is ignored. */
    UNBOUNDED_IN_FLIGHT,
    /** ping reports the broker reachable when it is not. */
    PING_ALWAYS_ANSWERS,
    /** A payload over 16 KiB loses its first 4 bytes, as a streamed body read too late did. */
    CUT_LARGE_PAYLOADS
  }

  /** The largest payload the reference broker accepts unless told otherwise. */
  public static final int DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024;

  private final ReentrantLock lock = new ReentrantLock();
  private final Condition changed = lock.newCondition();
  private final Map<String, Destination> destinations = new HashMap<>();
  private final Set<Fault> faults;
  private final boolean unreachable;
  private final Capabilities capabilities;
  private final CountDownLatch neverOpens = new CountDownLatch(1);
  private final ReferencePublisher publisher = new ReferencePublisher();
  private final List<ReferenceConsumer> consumers = new ArrayList<>();
  private long deliverySequence;
  private boolean closed;

  private ReferenceBroker(boolean unreachable, int maxMessageBytes, Set<Fault> faults) {
    this.unreachable = unreachable;
    this.faults = faults.isEmpty() ? EnumSet.noneOf(Fault.class) : EnumSet.copyOf(faults);
    this.capabilities =
        Capabilities.builder()
            .perKeyOrdering(true)
            .delayedRedelivery(Duration.ofDays(1))
            .maxMessageBytes(maxMessageBytes)
            .build();
  }

  /** A correct broker. */
  public static ReferenceBroker create() {
    return new ReferenceBroker(false, DEFAULT_MAX_MESSAGE_BYTES, Set.of());
  }

  /** A broker that breaks the given promises. */
  public static ReferenceBroker withFaults(Fault... faults) {
    return new ReferenceBroker(false, DEFAULT_MAX_MESSAGE_BYTES, Set.of(faults));
  }

  /** A broker with a custom size limit. */
  public static ReferenceBroker withMaxMessageBytes(int maxMessageBytes) {
    return new ReferenceBroker(false, maxMessageBytes, Set.of());
  }

  /** A broker that cannot be reached: every operation fails with a retriable error. */
  public static ReferenceBroker unreachable(Fault... faults) {
    return new ReferenceBroker(true, DEFAULT_MAX_MESSAGE_BYTES, Set.of(faults));
  }

  @Override
  public String name() {
    return ReferenceBrokerProvider.NAME;
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
    Objects.requireNonNull(subscription, "subscription");
    lock.lock();
    try {
      checkOpen();
      failIfUnreachable();
      Group group = destination(subscription.destination()).group(subscription.group());
      ReferenceConsumer consumer = new ReferenceConsumer(subscription, group);
      consumers.add(consumer);
      return consumer;
    } finally {
      lock.unlock();
    }
  }

  @Override
  public void ping(java.time.Duration timeout) {
    checkOpen();
    if (!faults.contains(Fault.PING_ALWAYS_ANSWERS)) {
      failIfUnreachable();
    }
  }

  /** How many envelopes a destination holds, acked or not; for assertions. */
  public int size(String destination) {
    lock.lock();
    try {
      Destination d = destinations.get(destination);
      return d == null ? 0 : d.log.size();
    } finally {
      lock.unlock();
    }
  }

  @Override
  public void close() {
    List<ReferenceConsumer> open;
    lock.lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
      open = new ArrayList<>(consumers);
    } finally {
      lock.unlock();
    }
    open.forEach(ReferenceConsumer::close);
  }

  private void checkOpen() {
    if (closed) {
      throw new IllegalStateException("reference broker is closed");
    }
  }

  private void failIfUnreachable() {
    if (!unreachable) {
      return;
    }
    if (faults.contains(Fault.HANG_WHEN_UNREACHABLE)) {
      try {
        neverOpens.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    throw new RetriableBrokerException("reference broker is unreachable");
  }

  private Destination destination(String name) {
    return destinations.computeIfAbsent(name, n -> new Destination());
  }

  /** A destination's log and its groups' views of it. */
  private final class Destination {
    final List<Envelope> log = new ArrayList<>();
    final Map<String, Group> groups = new HashMap<>();

    Group group(String name) {
      return groups.computeIfAbsent(
          name,
          n -> {
            Group g = new Group();
            log.forEach(e -> g.entries.add(new Entry(e)));
            return g;
          });
    }

    void append(Envelope envelope) {
      log.add(envelope);
      groups.values().forEach(g -> g.entries.add(new Entry(envelope)));
    }
  }

  /** One consumer group's state of every entry in a destination. */
  private static final class Group {
    final List<Entry> entries = new ArrayList<>();
  }

  private enum State {
    AVAILABLE,
    IN_FLIGHT,
    ACKED
  }

  private static final class Entry {
    final Envelope envelope;
    State state = State.AVAILABLE;
    long availableAtNanos = System.nanoTime();
    ReferenceConsumer owner;
    long deliveryId;
    int attempts;

    Entry(Envelope envelope) {
      this.envelope = envelope;
    }
  }

  private final class ReferencePublisher implements Publisher {
    @Override
    public void publish(String destination, Envelope envelope) {
      Objects.requireNonNull(envelope, "envelope");
      if (destination == null || destination.isBlank()) {
        throw new IllegalArgumentException("destination must not be blank");
      }
      lock.lock();
      try {
        checkOpen();
        failIfUnreachable();
        if (!faults.contains(Fault.ACCEPT_OVERSIZED)) {
          try {
            capabilities.check(destination, envelope);
          } catch (InvalidEventException invalid) {
            throw KeyedBatch.refused(envelope, invalid);
          }
        }
        if (faults.contains(Fault.CUT_LARGE_PAYLOADS) && envelope.payloadSize() > 16 * 1024) {
          byte[] p = envelope.payload();
          envelope =
              envelope.toBuilder().payload(java.util.Arrays.copyOfRange(p, 4, p.length)).build();
        }
        Envelope stored =
            faults.contains(Fault.DROP_HEADERS)
                ? new Envelope(
                    envelope.id(),
                    envelope.source(),
                    envelope.type(),
                    envelope.subject(),
                    envelope.key(),
                    envelope.time(),
                    envelope.dataContentType(),
                    Map.of(),
                    envelope.payload())
                : envelope;
        destination(destination).append(stored);
        changed.signalAll();
      } finally {
        lock.unlock();
      }
    }

    @Override
    public void publishAll(String destination, List<Envelope> batch) {
      if (faults.contains(Fault.DROP_BATCH_TAIL) && !batch.isEmpty()) {
        Publisher.super.publishAll(destination, batch.subList(0, batch.size() - 1));
        return;
      }
      Publisher.super.publishAll(destination, batch);
    }
  }

  private final class ReferenceConsumer implements Consumer {
    private final Subscription subscription;
    private final Group group;
    private boolean consumerClosed;

    ReferenceConsumer(Subscription subscription, Group group) {
      this.subscription = subscription;
      this.group = group;
    }

    @Override
    public Subscription subscription() {
      return subscription;
    }

    @Override
    public List<Delivery> poll(int maxDeliveries, Duration timeout) {
      if (maxDeliveries < 1) {
        throw new IllegalArgumentException("maxDeliveries must be >= 1");
      }
      long deadline = System.nanoTime() + timeout.toNanos();
      lock.lock();
      try {
        while (true) {
          if (consumerClosed) {
            throw new IllegalStateException("consumer is closed");
          }
          failIfUnreachable();
          List<Delivery> ready = takeReady(maxDeliveries);
          long now = System.nanoTime();
          if (!ready.isEmpty() || now >= deadline) {
            return ready;
          }
          long wait = Math.min(deadline, nextAvailableAt(now)) - now;
          changed.awaitNanos(Math.max(wait, 1));
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return List.of();
      } finally {
        lock.unlock();
      }
    }

    private List<Delivery> takeReady(int maxDeliveries) {
      long now = System.nanoTime();
      int inFlight = 0;
      for (Entry e : group.entries) {
        if (e.state == State.IN_FLIGHT && e.owner == this) {
          inFlight++;
        }
      }
      int room =
          faults.contains(Fault.UNBOUNDED_IN_FLIGHT)
              ? maxDeliveries
              : Math.min(maxDeliveries, subscription.maxInFlight() - inFlight);
      List<Delivery> ready = new ArrayList<>();
      // Keys whose earlier entry is someone else's, or waits out a nack delay: skip the rest.
      Set<String> blockedKeys = new java.util.HashSet<>();
      List<Entry> order = new ArrayList<>(group.entries);
      if (faults.contains(Fault.REVERSE_ORDER)) {
        java.util.Collections.reverse(order);
      }
      for (Entry e : order) {
        if (ready.size() >= room) {
          break;
        }
        if (faults.contains(Fault.SHARE_IN_FLIGHT)
            && e.state == State.IN_FLIGHT
            && e.owner != this) {
          ready.add(deliver(e)); // the breach: someone else's unsettled delivery
          continue;
        }
        String key = e.envelope.key();
        boolean ignoreKeys = faults.contains(Fault.REVERSE_ORDER);
        if (key != null && !ignoreKeys) {
          if (blockedKeys.contains(key)) {
            continue;
          }
          if (e.state == State.IN_FLIGHT) {
            if (e.owner != this) {
              blockedKeys.add(key);
            }
            continue;
          }
          if (e.state == State.AVAILABLE && e.availableAtNanos > now) {
            blockedKeys.add(key);
            continue;
          }
        }
        if (e.state == State.AVAILABLE && e.availableAtNanos <= now) {
          ready.add(deliver(e));
        }
      }
      return ready;
    }

    private Delivery deliver(Entry e) {
      e.state = State.IN_FLIGHT;
      e.owner = this;
      e.deliveryId = ++deliverySequence;
      e.attempts++;
      int attempt = faults.contains(Fault.FROZEN_ATTEMPTS) ? 1 : e.attempts;
      return new ReferenceDelivery(this, e, e.deliveryId, attempt);
    }

    private long nextAvailableAt(long now) {
      long next = Long.MAX_VALUE;
      for (Entry e : group.entries) {
        if (e.state == State.AVAILABLE && e.availableAtNanos > now) {
          next = Math.min(next, e.availableAtNanos);
        }
      }
      return next;
    }

    @Override
    public void close() {
      lock.lock();
      try {
        if (consumerClosed) {
          return;
        }
        consumerClosed = true;
        for (Entry e : group.entries) {
          if (e.state == State.IN_FLIGHT && e.owner == this) {
            if (faults.contains(Fault.LOSE_UNACKED_ON_CLOSE)) {
              e.state = State.ACKED;
            } else {
              release(e, 0);
            }
          }
        }
        consumers.remove(this);
        changed.signalAll();
      } finally {
        lock.unlock();
      }
    }

    void settle(Entry e, long deliveryId, boolean ack, Duration delay) {
      lock.lock();
      try {
        if (e.state != State.IN_FLIGHT || e.deliveryId != deliveryId || consumerClosed) {
          return; // stale: already settled, or no longer ours
        }
        if (!ack) {
          release(e, faults.contains(Fault.IGNORE_NACK_DELAY) ? 0 : delay.toNanos());
        } else if (faults.contains(Fault.REDELIVER_AFTER_ACK)) {
          release(e, 0);
        } else {
          e.state = State.ACKED;
          e.owner = null;
          if (faults.contains(Fault.ACK_IS_CUMULATIVE)) {
            for (Entry earlier : group.entries) {
              if (earlier == e) {
                break;
              }
              if (earlier.owner == this && earlier.state == State.IN_FLIGHT) {
                earlier.state = State.ACKED;
                earlier.owner = null;
              }
            }
          }
        }
        changed.signalAll();
      } finally {
        lock.unlock();
      }
    }

    private void release(Entry e, long delayNanos) {
      e.state = State.AVAILABLE;
      e.owner = null;
      e.availableAtNanos = System.nanoTime() + delayNanos;
    }
  }

  private final class ReferenceDelivery implements Delivery {
    private final ReferenceConsumer consumer;
    private final Entry entry;
    private final long deliveryId;
    private final int attempt;

    ReferenceDelivery(ReferenceConsumer consumer, Entry entry, long deliveryId, int attempt) {
      this.consumer = consumer;
      this.entry = entry;
      this.deliveryId = deliveryId;
      this.attempt = attempt;
    }

    @Override
    public Envelope envelope() {
      return entry.envelope;
    }

    @Override
    public int attempt() {
      return attempt;
    }

    @Override
    public Map<String, String> metadata() {
      return Map.of("deliveryId", Long.toString(deliveryId));
    }

    @Override
    public void ack() {
      consumer.settle(entry, deliveryId, true, Duration.ZERO);
    }

    @Override
    public void nack(Duration delay) {
      Deliveries.requireNackDelay(delay, capabilities.maxNackDelay());
      consumer.settle(entry, deliveryId, false, delay);
    }
  }
}
