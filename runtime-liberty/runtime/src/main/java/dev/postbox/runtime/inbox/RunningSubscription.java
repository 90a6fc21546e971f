package dev.postbox.runtime.inbox;

import dev.postbox.runtime.api.DeadLetterOperations;
import dev.postbox.runtime.api.InboxCounts;
import dev.postbox.runtime.api.InboxSubscription;
import dev.postbox.runtime.dedup.DedupFront;
import java.time.Duration;
import java.util.Optional;
import java.util.OptionalLong;

/** One running inbox subscription, as {@link InboxEngine} started it. */
public final class RunningSubscription implements InboxSubscription {
  final InboxSettings settings;
  final String destination;
  final DeadLetters deadLetters;
  final DeferredInbox queue;
  final ConsumerLoop loop;
  final Stalls stalls;
  final DedupFront front;
  final InboxCounting counts;
  final InboxCounters counters;

  RunningSubscription(
      InboxSettings settings,
      String destination,
      DeadLetters deadLetters,
      DeferredInbox queue,
      ConsumerLoop loop,
      Stalls stalls,
      DedupFront front,
      InboxCounting counts,
      InboxCounters counters) {
    this.settings = settings;
    this.destination = destination;
    this.deadLetters = deadLetters;
    this.queue = queue;
    this.loop = loop;
    this.stalls = stalls;
    this.front = front;
    this.counts = counts;
    this.counters = counters;
  }

  @Override
  public String name() {
    return settings.subscription();
  }

  @Override
  public String destination() {
    return destination;
  }

  @Override
  public boolean deferred() {
    return settings.deferred();
  }

  @Override
  public InboxCounts counts() {
    return counts.read();
  }

  @Override
  public long duplicatesSinceFirstStart() {
    return counters.duplicates(name());
  }

  @Override
  public OptionalLong deferredQueue() {
    return OptionalLong.of(queue.depth());
  }

  @Override
  public DeadLetterOperations deadLetters() {
    return deadLetters;
  }

  /** The settings it runs with, after the broker's limits. */
  InboxSettings settings() {
    return settings;
  }

  /** How long a delivery has waited without being acknowledged or dead-lettered, if any. */
  public Optional<Duration> stuckFor() {
    return stalls.stuckFor();
  }

  /** The in-memory dedup front, or null when it has none. */
  public DedupFront front() {
    return front;
  }
}
