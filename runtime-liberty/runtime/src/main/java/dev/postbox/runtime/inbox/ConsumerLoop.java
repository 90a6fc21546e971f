package dev.postbox.runtime.inbox;

import dev.postbox.spi.Consumer;
import dev.postbox.spi.Delivery;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * A subscription's poll loop: polls, hands each batch to the inbox, and keeps going through
 * failures. When polls have failed without a break for {@code resubscribeAfter}, it closes the
 * consumer and subscribes again (then at most once per {@code resubscribeAfter}): a consumer whose
 * connection died and that cannot recover by itself would otherwise be polled in vain until the
 * application restarts, while pings from fresh connections report the broker healthy. Closing hands
 * the unacknowledged deliveries back to the broker, so nothing is lost by it.
 *
 * <p>When the inbox cannot write to its database ({@link InboxUnavailableException}), the loop
 * pauses: it polls nothing more, keeps the batch's unsettled deliveries unacknowledged (no ack
 * without a commit) and hands them to the inbox again, in their order, every {@code backoff}, until
 * they are written. So no attempt is burnt and no back-off grows while the database is down, no
 * later event of a key overtakes one left unsettled, and the consumer resumes within one back-off
 * of the database's return. (Kafka: a pause longer than {@code max.poll.interval.ms} costs a
 * rebalance; the partition's unacknowledged records then come back from the committed offset, in
 * order, and the inbox skips what it has.)
 *
 * <p>Only failed polls count towards re-subscribing. A batch the inbox could not process (the
 * database is down) came from a working consumer; a new one would not help, and with Kafka it would
 * cost the group a rebalance. Both kinds are reported by {@link #failingFor()}.
 */
final class ConsumerLoop implements Runnable {

  private static final System.Logger LOG = System.getLogger(ConsumerLoop.class.getName());

  private final String subscription;
  private final Supplier<Consumer> subscribe;
  private final java.util.function.Consumer<List<Delivery>> process;
  private final Duration resubscribeAfter;
  private final Duration backoff;
  private final LongSupplier nanoTime;

  private volatile Consumer consumer;
  private volatile boolean stopped;
  private volatile long failingSince; // System.nanoTime() of the first failure in a row; 0: none
  private long pollsFailingSince; // the same, for failed polls only
  private volatile String lastError;
  private long lastSubscribed;
  private boolean resubscribePending;
  private volatile Stalls stalls;

  /**
   * @param consumer the first consumer, subscribed by the caller so that startup fails fast
   * @param subscribe subscribes again; may throw, and is retried after the next failing stretch
   * @param process the inbox's handling of one poll batch; may throw (the database is down)
   */
  public ConsumerLoop(
      String subscription,
      Consumer consumer,
      Supplier<Consumer> subscribe,
      java.util.function.Consumer<List<Delivery>> process,
      Duration resubscribeAfter,
      Duration backoff,
      LongSupplier nanoTime) {
    this.subscription = subscription;
    this.consumer = consumer;
    this.subscribe = subscribe;
    this.process = process;
    this.resubscribeAfter = resubscribeAfter;
    this.backoff = backoff;
    this.nanoTime = nanoTime;
    this.lastSubscribed = nanoTime.getAsLong();
  }

  /**
   * Runs until {@link #close()}.
   *
   * @throws IllegalStateException if the consumer reports itself closed while the loop was not
   *     stopped (someone else closed it)
   */
  @Override
  public void run() {
    while (!stopped) {
      List<Delivery> batch;
      try {
        batch = consumer.poll(500, Duration.ofMillis(200));
      } catch (IllegalStateException closed) {
        if (stopped) {
          return;
        }
        if (!resubscribePending) {
          throw closed;
        }
        pollFailed(closed); // the loop closed it and could not subscribe again yet
        LockSupport.parkNanos(backoff.toNanos());
        continue;
      } catch (RuntimeException e) {
        pollFailed(e); // a broker hiccup: back off, then poll again
        LockSupport.parkNanos(backoff.toNanos());
        continue;
      }
      pollsFailingSince = 0;
      Stalls watching = stalls;
      batch =
          watching != null
              ? watching.watch(batch)
              : batch.stream().<Delivery>map(Tracked::of).toList();
      try {
        process.accept(batch);
        failingSince = 0;
      } catch (InboxUnavailableException down) {
        failed(down);
        retryUntilWritten(batch);
      } catch (RuntimeException e) {
        // The database, most likely: back off; the unacked deliveries come back.
        failed(e);
        LockSupport.parkNanos(backoff.toNanos());
      }
    }
  }

  /**
   * The pause while the database is down: the batch's unsettled deliveries, in order, handed to the
   * inbox again every back-off until they are written (or the loop stops: they stay unacknowledged
   * and the broker redelivers them).
   */
  private void retryUntilWritten(List<Delivery> batch) {
    List<Delivery> left = unsettled(batch);
    while (!stopped && !left.isEmpty()) {
      LockSupport.parkNanos(backoff.toNanos());
      if (stopped) {
        return;
      }
      try {
        process.accept(left);
        failingSince = 0;
        return;
      } catch (InboxUnavailableException stillDown) {
        failed(stillDown);
        left = unsettled(left);
      } catch (RuntimeException e) {
        failed(e); // not the database's writes: as any failed batch, its deliveries come back
        return;
      }
    }
  }

  private static List<Delivery> unsettled(List<Delivery> batch) {
    return batch.stream().filter(d -> !((Tracked) d).settled()).toList();
  }

  /** Records a failure; returns when it started, without a break (System.nanoTime()). */
  private long failed(RuntimeException e) {
    long now = nanoTime.getAsLong();
    if (failingSince == 0) {
      failingSince = now;
    }
    lastError = String.valueOf(e);
    LOG.log(Level.WARNING, "inbox loop of " + subscription + " failed; retrying: " + e);
    return now;
  }

  private void pollFailed(RuntimeException e) {
    long now = failed(e);
    if (pollsFailingSince == 0) {
      pollsFailingSince = now;
    }
    if (now - pollsFailingSince < resubscribeAfter.toNanos()
        || now - lastSubscribed < resubscribeAfter.toNanos()) {
      return;
    }
    lastSubscribed = now;
    LOG.log(
        Level.WARNING,
        "inbox loop of "
            + subscription
            + " has failed for "
            + TimeUnit.NANOSECONDS.toSeconds(now - pollsFailingSince)
            + " s; subscribing again");
    closeQuietly(consumer);
    resubscribePending = true;
    try {
      Consumer fresh = subscribe.get();
      consumer = fresh;
      resubscribePending = false;
      if (stopped) {
        closeQuietly(fresh); // close() ran meanwhile and closed the old one only
      }
    } catch (RuntimeException subscribeFailed) {
      // keep the closed one: its polls fail, and the next stretch tries again
      LOG.log(Level.WARNING, "subscribing " + subscription + " again failed: " + subscribeFailed);
    }
  }

  /** Watches every delivery until it is acknowledged (see {@link Stalls}); call before run. */
  public ConsumerLoop watchedBy(Stalls stalls) {
    this.stalls = stalls;
    return this;
  }

  /** How long polls or batches have failed without a break, or empty while they work. */
  public Optional<Duration> failingFor() {
    long since = failingSince;
    return since == 0
        ? Optional.empty()
        : Optional.of(Duration.ofNanos(nanoTime.getAsLong() - since));
  }

  /** The last failure's description, or null. */
  public String lastError() {
    return lastError;
  }

  /** Stops the loop and closes its consumer; the loop's thread ends at its next poll. */
  public void close() {
    stopped = true;
    closeQuietly(consumer);
  }

  private static void closeQuietly(Consumer c) {
    try {
      c.close();
    } catch (RuntimeException e) {
      LOG.log(Level.DEBUG, "closing a consumer failed: " + e);
    }
  }
}
