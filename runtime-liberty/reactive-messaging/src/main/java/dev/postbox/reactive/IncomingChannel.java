package dev.postbox.reactive;

import dev.postbox.runtime.api.EventHandler;
import dev.postbox.spi.Envelope;
import jakarta.transaction.TransactionSynchronizationRegistry;
import java.lang.System.Logger.Level;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.eclipse.microprofile.reactive.messaging.Message;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;

/**
 * The start of an incoming channel, and the inbox handler of its subscription: the inbox calls
 * {@link #handle} inside the JTA transaction that records the event, and this hands the event to
 * the channel's method as a message, on the same thread. The method's writes therefore join the
 * inbox's transaction when the method runs synchronously (a plain {@code @Incoming} method
 * returning {@code void}, a value or a completed stage): they commit with the inbox record and the
 * broker is acknowledged after that commit.
 *
 * <p>An ack of the message lets the transaction commit; a nack (the method threw) fails the
 * attempt: everything rolls back and the inbox retries, then dead-letters. One event at a time goes
 * through a channel (Reactive Streams forbids concurrent {@code onNext}); events wait for the
 * method's demand.
 *
 * <p>What cannot be made safe is refused or failed, never committed half-done:
 *
 * <ul>
 *   <li>a stream that Reactive Messaging ends while it handles an event (a method that threw after
 *       its message was acked, with pre-processing or manual acknowledgement) fails that attempt;
 *       the channel then fails every event at once, saying why, until the application restarts
 *       (Reactive Messaging does not subscribe again);
 *   <li>a message settled inside another JTA transaction (two {@code postbox} channels merged into
 *       one method, whose merge ran this event on another event's thread) rolls that transaction
 *       back and fails this attempt: both events are retried, neither effect is kept;
 *   <li>a method that settles later on a thread without a transaction (asynchronous) is waited for
 *       up to {@code ack-timeout}, with a warning: its writes are outside the inbox's transaction.
 * </ul>
 */
final class IncomingChannel implements Publisher<Message<?>>, EventHandler {

  private static final System.Logger LOG = System.getLogger(IncomingChannel.class.getName());

  private final ChannelSettings settings;
  private final ClassLoader loader;
  private final TransactionSynchronizationRegistry transactions;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition demand = lock.newCondition();
  private final AtomicBoolean warnedAsync = new AtomicBoolean();
  private final AtomicBoolean warnedForeign = new AtomicBoolean();

  /** Guarded by {@link #lock}: the current subscriber, its outstanding demand. */
  private Subscriber<? super Message<?>> subscriber;

  private long requested;

  /** Guarded by {@link #lock}: why the channel's stream ended, once it has. */
  private String ended;

  /**
   * @param transactions the JTA registry, to tell the inbox's transaction from another; null where
   *     there is none (unit tests)
   */
  IncomingChannel(
      ChannelSettings settings,
      ClassLoader loader,
      TransactionSynchronizationRegistry transactions) {
    this.settings = settings;
    this.loader = loader;
    this.transactions = transactions;
    Payloads.checkDecodable(settings, loader);
  }

  ChannelSettings settings() {
    return settings;
  }

  @Override
  public void subscribe(Subscriber<? super Message<?>> s) {
    Objects.requireNonNull(s, "subscriber");
    lock.lock();
    try {
      if (subscriber != null || ended != null) {
        s.onSubscribe(new Cancelled());
        s.onError(
            new IllegalStateException(
                "channel '" + settings.channel() + "' (connector postbox) takes one subscriber"));
        return;
      }
      subscriber = s;
      requested = 0;
      s.onSubscribe(new Demand(s)); // under the lock: no onNext before onSubscribe returned
    } finally {
      lock.unlock();
    }
  }

  @Override
  public void handle(Envelope event) throws Exception {
    Object transaction = transactions == null ? null : transactions.getTransactionKey();
    Object payload = Payloads.decode(event, settings.payload(), loader);
    CompletableFuture<Void> settled = new CompletableFuture<>();
    Message<?> message =
        new EventMessage<>(
            payload,
            new IncomingEvent(event),
            () -> {
              settle(settled, transaction, event, null);
              return CompletableFuture.completedFuture(null);
            },
            failure -> {
              settle(
                  settled,
                  transaction,
                  event,
                  failure == null ? new IllegalStateException("nacked") : failure);
              return CompletableFuture.completedFuture(null);
            });
    long waitNanos = settings.waitForSubscriber().toNanos();
    long deadline = System.nanoTime() + waitNanos;
    if (!lock.tryLock(waitNanos, TimeUnit.NANOSECONDS)) {
      // Another event of this channel holds the method: its transaction may hold a row this
      // event's transaction locked. Give up rather than wait in a cycle the database cannot see.
      throw new IllegalStateException(
          "channel '"
              + settings.channel()
              + "' (connector postbox): event "
              + event.id()
              + " waited "
              + settings.waitForSubscriber()
              + " for the channel's previous event; it will be retried");
    }
    try {
      while (subscriber == null || requested == 0) {
        if (ended != null) {
          throw new IllegalStateException(ended);
        }
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          throw new IllegalStateException(
              "channel '"
                  + settings.channel()
                  + "' (connector postbox): no @Incoming method asked for event "
                  + event.id()
                  + " within "
                  + settings.waitForSubscriber()
                  + "; it will be retried");
        }
        demand.awaitNanos(left);
      }
      if (requested != Long.MAX_VALUE) {
        requested--;
      }
      Subscriber<? super Message<?>> to = subscriber;
      // Under the lock: one onNext at a time, as Reactive Streams requires.
      to.onNext(message);
      if (subscriber != to) {
        // The stream ended while it had this event (see endStream): whatever was acked, the
        // method did not finish; nothing of this attempt may commit.
        throw new IllegalStateException(
            ended != null ? ended : "channel '" + settings.channel() + "' ended its stream");
      }
    } finally {
      lock.unlock();
    }
    if (!settled.isDone() && warnedAsync.compareAndSet(false, true)) {
      LOG.log(
          Level.WARNING,
          "channel '"
              + settings.channel()
              + "' (connector postbox): the @Incoming method had not settled event "
              + event.id()
              + " when it returned (asynchronous): its database writes are not in the inbox's"
              + " transaction, so a redelivery after a crash may repeat them. Use a synchronous"
              + " method, or a @Handles bean.");
    }
    try {
      settled.get(settings.ackTimeout().toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      throw new IllegalStateException(
          "channel '"
              + settings.channel()
              + "': event "
              + event.id()
              + " was neither acked nor nacked within "
              + settings.ackTimeout()
              + "; it will be retried");
    } catch (ExecutionException | CompletionException e) {
      Throwable cause = methodFailure(e.getCause() == null ? e : e.getCause());
      if (cause instanceof Exception ex) {
        throw ex;
      }
      throw (Error) cause;
    }
  }

  /**
   * Settles an event's attempt from whatever thread acks or nacks it. Inside a transaction other
   * than the attempt's own, the method's writes went into that transaction: it is marked
   * rollback-only and the attempt fails, so neither commits a half.
   */
  private void settle(
      CompletableFuture<Void> settled, Object ours, Envelope event, Throwable failure) {
    Object here = transactions == null ? null : transactions.getTransactionKey();
    if (here != null && !here.equals(ours)) {
      try {
        transactions.setRollbackOnly();
      } catch (RuntimeException e) {
        LOG.log(Level.DEBUG, "marking the other transaction rollback-only failed: " + e);
      }
      String why =
          "channel '"
              + settings.channel()
              + "' (connector postbox): event "
              + event.id()
              + " was handled inside another event's transaction (two postbox channels merged into"
              + " one method?); both are rolled back and retried. Give each postbox channel a"
              + " method of its own.";
      if (warnedForeign.compareAndSet(false, true)) {
        LOG.log(Level.ERROR, why);
      }
      settled.completeExceptionally(new IllegalStateException(why));
      return;
    }
    if (failure == null) {
      settled.complete(null);
    } else {
      settled.completeExceptionally(failure);
    }
  }

  /**
   * What the method threw: Reactive Messaging (SmallRye, under Liberty) nacks with its own wrapper,
   * "exception thrown when calling the method", around the reflective call's wrapper, around the
   * method's exception. The dead letter's reason and its grouping by error class should name that
   * exception, not the wrappers.
   */
  static Throwable methodFailure(Throwable nack) {
    Throwable t = nack;
    while (t.getCause() != null && t.getCause() != t && isWrapper(t)) {
      t = t.getCause();
    }
    return t;
  }

  private static boolean isWrapper(Throwable t) {
    String name = t.getClass().getName();
    return t instanceof java.lang.reflect.InvocationTargetException
        || t instanceof java.lang.reflect.UndeclaredThrowableException
        || t instanceof CompletionException
        || t instanceof ExecutionException
        || (name.startsWith("io.smallrye.reactive.messaging")
            && name.endsWith(".ProcessingException"));
  }

  /** Called with the lock held: the subscriber cancelled; Reactive Messaging will not come back. */
  private void endStream(Subscriber<?> owner) {
    if (subscriber != owner) {
      return;
    }
    subscriber = null;
    requested = 0;
    ended =
        "channel '"
            + settings.channel()
            + "' (connector postbox): Reactive Messaging ended the channel's stream (its method"
            + " failed after its message was acknowledged, with pre-processing or manual"
            + " acknowledgement, or the application is stopping); its events fail and are retried,"
            + " then dead-lettered, until the application restarts";
    LOG.log(Level.WARNING, ended);
    demand.signalAll();
  }

  /** The subscription handed to the channel's subscriber. */
  private final class Demand implements Subscription {
    private final Subscriber<? super Message<?>> owner;

    Demand(Subscriber<? super Message<?>> owner) {
      this.owner = owner;
    }

    @Override
    public void request(long n) {
      lock.lock();
      try {
        if (subscriber != owner) {
          return;
        }
        if (n <= 0) {
          endStream(owner);
          owner.onError(new IllegalArgumentException("request(" + n + "): must be positive"));
          return;
        }
        requested = requested + n < 0 ? Long.MAX_VALUE : requested + n;
        demand.signalAll();
      } finally {
        lock.unlock();
      }
    }

    @Override
    public void cancel() {
      lock.lock();
      try {
        endStream(owner);
      } finally {
        lock.unlock();
      }
    }
  }

  private static final class Cancelled implements Subscription {
    @Override
    public void request(long n) {}

    @Override
    public void cancel() {}
  }
}
