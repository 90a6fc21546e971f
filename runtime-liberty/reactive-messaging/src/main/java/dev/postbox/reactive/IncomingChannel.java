package dev.postbox.reactive;

import dev.postbox.runtime.jakarta.EventHandler;
import dev.postbox.spi.Envelope;
import java.lang.System.Logger.Level;
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
 * inbox's transaction when the method runs synchronously (a plain {@code @Incoming} method, not
 * {@code @Blocking}, returning {@code void} or a completed stage): they commit with the inbox
 * record and the broker is acknowledged after that commit.
 *
 * <p>An ack of the message lets the transaction commit; a nack (the method threw) fails the
 * attempt: everything rolls back and the inbox retries, then dead-letters. One event at a time goes
 * through a channel (Reactive Streams forbids concurrent {@code onNext}); events wait for the
 * method's demand. A method that completes later, on another thread, is waited for up to {@code
 * ack-timeout}, but its writes are then outside the inbox's transaction: a warning says so once.
 */
final class IncomingChannel implements Publisher<Message<?>>, EventHandler {

  private static final System.Logger LOG = System.getLogger(IncomingChannel.class.getName());

  private final ChannelSettings settings;
  private final ClassLoader loader;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition demand = lock.newCondition();
  private final AtomicBoolean warnedAsync = new AtomicBoolean();

  /** Guarded by {@link #lock}: the current subscriber, its outstanding demand. */
  private Subscriber<? super Message<?>> subscriber;

  private long requested;

  IncomingChannel(ChannelSettings settings, ClassLoader loader) {
    this.settings = settings;
    this.loader = loader;
  }

  ChannelSettings settings() {
    return settings;
  }

  @Override
  public void subscribe(Subscriber<? super Message<?>> s) {
    lock.lock();
    try {
      if (subscriber != null) {
        s.onSubscribe(new Cancelled());
        s.onError(
            new IllegalStateException(
                "channel '" + settings.channel() + "' (connector postbox) takes one subscriber"));
        return;
      }
      subscriber = s;
      requested = 0;
    } finally {
      lock.unlock();
    }
    s.onSubscribe(new Demand(s));
  }

  @Override
  public void handle(Envelope event) throws Exception {
    Object payload = Payloads.decode(event, settings.payload(), loader);
    CompletableFuture<Void> settled = new CompletableFuture<>();
    Message<?> message =
        new EventMessage<>(
            payload,
            new IncomingEvent(event),
            () -> {
              settled.complete(null);
              return CompletableFuture.completedFuture(null);
            },
            failure -> {
              settled.completeExceptionally(
                  failure == null ? new IllegalStateException("nacked") : failure);
              return CompletableFuture.completedFuture(null);
            });
    lock.lock();
    try {
      long waitNanos = settings.waitForSubscriber().toNanos();
      while (subscriber == null || requested == 0) {
        if (waitNanos <= 0) {
          throw new IllegalStateException(
              "channel '"
                  + settings.channel()
                  + "' (connector postbox): no @Incoming method asked for event "
                  + event.id()
                  + " within "
                  + settings.waitForSubscriber()
                  + "; it will be retried");
        }
        waitNanos = demand.awaitNanos(waitNanos);
      }
      if (requested != Long.MAX_VALUE) {
        requested--;
      }
      // Under the lock: one onNext at a time, as Reactive Streams requires.
      subscriber.onNext(message);
    } finally {
      lock.unlock();
    }
    if (!settled.isDone()) {
      if (warnedAsync.compareAndSet(false, true)) {
        LOG.log(
            Level.WARNING,
            "channel '"
                + settings.channel()
                + "' (connector postbox): the @Incoming method had not settled event "
                + event.id()
                + " when it returned (asynchronous or @Blocking): its database writes are not in"
                + " the inbox's transaction, so a redelivery after a crash may repeat them. Use a"
                + " synchronous method, or a @Handles bean.");
      }
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
   * What the method threw: Reactive Messaging (SmallRye, under Liberty) nacks with its own wrapper,
   * "exception thrown when calling the method", around the reflective call's wrapper, around the
   * method's exception. The dead letter's reason and its grouping by error class should name that
   * exception, not the wrapper.
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

  /** The subscription handed to the channel's subscriber. */
  private final class Demand implements Subscription {
    private final Subscriber<? super Message<?>> owner;

    Demand(Subscriber<? super Message<?>> owner) {
      this.owner = owner;
    }

    @Override
    public void request(long n) {
      if (n <= 0) {
        owner.onError(new IllegalArgumentException("request(" + n + "): must be positive"));
        cancel();
        return;
      }
      lock.lock();
      try {
        if (subscriber == owner) {
          requested = requested + n < 0 ? Long.MAX_VALUE : requested + n;
          demand.signalAll();
        }
      } finally {
        lock.unlock();
      }
    }

    @Override
    public void cancel() {
      lock.lock();
      try {
        if (subscriber == owner) {
          subscriber = null; // events wait for the next subscriber, then fail and are retried
          requested = 0;
        }
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
