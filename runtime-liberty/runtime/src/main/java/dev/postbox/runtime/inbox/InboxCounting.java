package dev.postbox.runtime.inbox;

import dev.postbox.runtime.api.DeadLetterReason;
import dev.postbox.runtime.api.InboxCounts;
import dev.postbox.runtime.api.InboxListener;
import dev.postbox.spi.Envelope;
import java.util.concurrent.atomic.AtomicLong;

/** The engine's own counts of one subscription, passed on to the caller's listener. */
final class InboxCounting implements InboxListener {
  private final InboxListener also;
  private final AtomicLong received = new AtomicLong();
  private final AtomicLong processed = new AtomicLong();
  private final AtomicLong duplicates = new AtomicLong();
  private final AtomicLong conflicts = new AtomicLong();
  private final AtomicLong retries = new AtomicLong();
  private final AtomicLong deadLettered = new AtomicLong();

  InboxCounting(InboxListener also) {
    this.also = also;
  }

  InboxCounts read() {
    return new InboxCounts(
        received.get(),
        processed.get(),
        duplicates.get(),
        conflicts.get(),
        retries.get(),
        deadLettered.get());
  }

  /** Also wakes the deferred workers when events are queued. */
  InboxListener waking(DeferredInbox workers) {
    InboxCounting counts = this;
    return new InboxListener() {
      @Override
      public void processed(String subscription, Envelope event) {
        counts.processed(subscription, event);
      }

      @Override
      public void received(String subscription, Envelope event) {
        counts.received(subscription, event);
        workers.wake();
      }

      @Override
      public void duplicate(String subscription, Envelope event) {
        counts.duplicate(subscription, event);
      }

      @Override
      public void retried(String subscription, Envelope event, int attempts) {
        counts.retried(subscription, event, attempts);
      }

      @Override
      public void deadLettered(String subscription, DeadLetterReason reason) {
        counts.deadLettered(subscription, reason);
      }

      @Override
      public void parked(String subscription, Envelope event) {
        counts.parked(subscription, event);
      }
    };
  }

  @Override
  public void processed(String subscription, Envelope event) {
    processed.incrementAndGet();
    also.processed(subscription, event);
  }

  @Override
  public void received(String subscription, Envelope event) {
    received.incrementAndGet();
    also.received(subscription, event);
  }

  @Override
  public void duplicate(String subscription, Envelope event) {
    duplicates.incrementAndGet();
    also.duplicate(subscription, event);
  }

  @Override
  public void retried(String subscription, Envelope event, int attempts) {
    retries.incrementAndGet();
    also.retried(subscription, event, attempts);
  }

  @Override
  public void deadLettered(String subscription, DeadLetterReason reason) {
    deadLettered.incrementAndGet();
    if (reason == DeadLetterReason.CONFLICT) {
      conflicts.incrementAndGet();
    }
    also.deadLettered(subscription, reason);
  }

  @Override
  public void parked(String subscription, Envelope event) {
    also.parked(subscription, event);
  }
}
