package dev.postbox.runtime.jakarta;

import dev.postbox.runtime.Postbox;
import dev.postbox.runtime.api.DeadLetterReason;
import dev.postbox.runtime.api.InboxListener;
import dev.postbox.runtime.api.Lag;
import dev.postbox.runtime.inbox.InboxHealth;
import dev.postbox.runtime.inbox.RunningSubscription;
import dev.postbox.runtime.relay.OutboxEngine;
import dev.postbox.spi.Envelope;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Duration;
import java.time.Instant;
import org.eclipse.microprofile.metrics.Counter;
import org.eclipse.microprofile.metrics.MetricRegistry;
import org.eclipse.microprofile.metrics.Tag;
import org.eclipse.microprofile.metrics.Timer;

/** Postbox's MicroProfile metrics: gauges over the engine, and counters the inbox increments. */
@ApplicationScoped
class PostboxMetrics {

  @Inject MetricRegistry metrics;

  /** Gauges over the running outbox and inbox. */
  void register(Postbox postbox) {
    OutboxEngine outbox = postbox.outboxEngine();
    metrics.gauge("postbox.outbox.pending", () -> lag(outbox).pending());
    metrics.gauge("postbox.outbox.failed", () -> lag(outbox).failed());
    metrics.gauge("postbox.outbox.oldest.pending.age.seconds", outbox::oldestPendingAgeSeconds);
    metrics.gauge("postbox.outbox.published.total", outbox::publishedByThisInstance);
    metrics.gauge("postbox.outbox.publish.failures.total", outbox::failures);
    metrics.gauge("postbox.outbox.fenced.batches.total", outbox::fencedBatches);
    // Scheduled events are not lag: counted apart, with how long until the next falls due (0 with
    // none waiting; negative while a due one waits for the relay).
    metrics.gauge("postbox.outbox.scheduled", () -> lag(outbox).scheduled());
    metrics.gauge(
        "postbox.outbox.scheduled.next.due.seconds",
        () -> {
          Instant next = lag(outbox).nextDue();
          return next == null ? 0 : Duration.between(Instant.now(), next).toMillis() / 1000.0;
        });
    metrics.gauge("postbox.outbox.expired.total", outbox::expiredRows);
    // Apart from lag: whether the broker takes this instance's events, and for how long it has not.
    metrics.gauge(
        "postbox.outbox.broker.available", () -> outbox.brokerOutages().isEmpty() ? 1L : 0L);
    metrics.gauge(
        "postbox.outbox.broker.unavailable.seconds",
        () ->
            outbox.brokerOutages().stream()
                .map(o -> Duration.between(o.since(), Instant.now()).toSeconds())
                .max(Long::compare)
                .orElse(0L));
    if (outbox.wakeUpListening().isPresent()) {
      // PostgreSQL: 0 while the LISTEN connection reconnects, or after it turned itself off (the
      // driver's classes not visible): commits elsewhere then wait for the poll interval.
      metrics.gauge(
          "postbox.outbox.wakeup.listening",
          () -> outbox.wakeUpListening().orElse(false) ? 1L : 0L);
    }
    for (RunningSubscription r : postbox.inboxEngine().running()) {
      Tag tag = new Tag("subscription", r.name());
      if (r.front() != null) {
        metrics.gauge("postbox.inbox.front.ids", r.front()::size, tag);
        metrics.gauge("postbox.inbox.front.size.evictions.total", r.front()::sizeEvictions, tag);
      }
      metrics.gauge(
          "postbox.inbox.stuck.seconds",
          () -> r.stuckFor().map(Duration::toSeconds).orElse(0L),
          tag);
      // What waits for an operator, as read every 5 s: it stays while the subscription is quiet,
      // where the counters' increase falls back to 0.
      metrics.gauge(
          "postbox.inbox.dead.letters.open", () -> openLetters(postbox, r.name()).open(), tag);
      metrics.gauge(
          "postbox.inbox.parked.open", () -> openLetters(postbox, r.name()).parked(), tag);
    }
  }

  private static InboxHealth.OpenLetters openLetters(Postbox postbox, String subscription) {
    return postbox.inboxEngine().health().openLetters().getOrDefault(subscription, NO_LETTERS);
  }

  private static final InboxHealth.OpenLetters NO_LETTERS = new InboxHealth.OpenLetters(0, 0, 0);

  private static Lag lag(OutboxEngine outbox) {
    Lag l = outbox.cachedLag();
    return l == null ? new Lag(0, 0, null) : l;
  }

  /** Counters and the handler timer of one subscription. */
  InboxListener inboxListener(String subscription) {
    Tag tag = new Tag("subscription", subscription);
    Counter processed = metrics.counter("postbox.inbox.processed", tag);
    Counter received = metrics.counter("postbox.inbox.received", tag);
    Counter duplicates = metrics.counter("postbox.inbox.duplicates", tag);
    Counter conflicts = metrics.counter("postbox.inbox.conflicts", tag);
    Counter expired = metrics.counter("postbox.inbox.expired", tag);
    Counter retries = metrics.counter("postbox.inbox.retries", tag);
    Counter deadLetters = metrics.counter("postbox.inbox.dead.letters", tag);
    Counter parked = metrics.counter("postbox.inbox.parked", tag);
    Timer handler = metrics.timer("postbox.inbox.handler", tag);
    return new InboxListener() {
      @Override
      public void processed(String subscription, Envelope event) {
        processed.inc();
      }

      @Override
      public void received(String subscription, Envelope event) {
        received.inc();
      }

      @Override
      public void duplicate(String subscription, Envelope event) {
        duplicates.inc();
      }

      @Override
      public void retried(String subscription, Envelope event, int attempts) {
        retries.inc();
      }

      @Override
      public void deadLettered(String subscription, DeadLetterReason reason) {
        deadLetters.inc();
        if (reason == DeadLetterReason.CONFLICT) {
          conflicts.inc();
        } else if (reason == DeadLetterReason.EXPIRED) {
          expired.inc();
        }
      }

      @Override
      public void parked(String subscription, Envelope event) {
        parked.inc();
      }

      @Override
      public void handled(String subscription, Duration took) {
        handler.update(took);
      }
    };
  }
}
