package dev.postbox.runtime.relay;

import dev.postbox.runtime.checkpoint.Checkpoint;
import dev.postbox.runtime.checkpoint.Checkpoints;
import dev.postbox.runtime.outbox.OutboxRow;
import dev.postbox.spi.BatchPublishException;
import dev.postbox.spi.Batches;
import dev.postbox.spi.BrokerException;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.Publisher;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The broker calls of one relay batch, outside any transaction: per destination in id order, a
 * failed key's later rows held back whatever their destination, and a destination that is out
 * ({@link Outages}) not called at all.
 */
final class BatchSender {

  private final Publisher publisher;
  private final Outages outages;
  private final Clock clock;

  BatchSender(Publisher publisher, Outages outages, Clock clock) {
    this.publisher = publisher;
    this.outages = outages;
    this.clock = clock;
  }

  /**
   * What a batch's broker calls came to.
   *
   * @param failures each failed row's error
   * @param held rows not sent because their destination is out, with when to try them again
   * @param recovered destinations whose outage this batch ended
   */
  record Outcome(
      Map<Long, BrokerException> failures, Map<Long, Instant> held, Set<String> recovered) {}

  /** Publishes the batch per destination, keeping id order; no transaction is open meanwhile. */
  Outcome publish(List<OutboxRow> batch) {
    Map<Long, BrokerException> failures = new HashMap<>();
    Map<Long, Instant> held = new HashMap<>();
    Set<String> recovered = new HashSet<>();
    Map<String, BrokerException> failedKeys = new HashMap<>();
    int from = 0;
    while (from < batch.size()) {
      String destination = batch.get(from).destination();
      int to = from;
      while (to < batch.size() && batch.get(to).destination().equals(destination)) {
        to++;
      }
      List<OutboxRow> group = batch.subList(from, to);
      from = to;
      publishGroup(destination, group, failures, held, recovered, failedKeys);
    }
    return new Outcome(failures, held, recovered);
  }

  /** One destination's run of rows: sends what may go, records what failed, by row and by key. */
  private void publishGroup(
      String destination,
      List<OutboxRow> group,
      Map<Long, BrokerException> failures,
      Map<Long, Instant> held,
      Set<String> recovered,
      Map<String, BrokerException> failedKeys) {
    try {
      sendGroup(destination, group, failures, held, recovered, failedKeys);
    } finally {
      for (OutboxRow row : group) {
        BrokerException failure = failures.get(row.id());
        if (failure != null && row.key() != null) {
          failedKeys.putIfAbsent(row.key(), failure);
        }
      }
    }
  }

  private void sendGroup(
      String destination,
      List<OutboxRow> group,
      Map<Long, BrokerException> failures,
      Map<Long, Instant> held,
      Set<String> recovered,
      Map<String, BrokerException> failedKeys) {
    List<Envelope> envelopes = new ArrayList<>(group.size());
    List<OutboxRow> sendable = new ArrayList<>(group.size());
    for (OutboxRow row : group) {
      BrokerException earlier = row.key() == null ? null : failedKeys.get(row.key());
      if (earlier != null) {
        // Order is per key, across destinations: a row never overtakes an earlier row of its
        // key that did not go, whatever destination either has.
        failures.put(row.id(), Batches.heldBack(earlier));
        continue;
      }
      try {
        envelopes.add(row.toEnvelope());
        sendable.add(row);
      } catch (IllegalArgumentException poison) {
        failures.put(
            row.id(),
            new dev.postbox.spi.PermanentBrokerException(
                "row is not a valid event: " + poison.getMessage()));
      }
    }
    if (sendable.isEmpty()) {
      return;
    }
    Outages.Outage out = outages.hold(destination, clock.instant());
    if (out != null) {
      BrokerException wait = Outages.held(destination, out);
      for (OutboxRow row : sendable) {
        failures.put(row.id(), wait);
        held.put(row.id(), out.heldUntil(clock.instant(), outages.interval()));
      }
      return;
    }
    BrokerException whole = null; // set when nothing went through and every failure is retriable
    boolean answered = false;
    try {
      publisher.publishAll(destination, envelopes);
      Checkpoints.reach(Checkpoint.RELAY_PUBLISHED_NOT_MARKED);
      answered = true;
      if (outages.succeeded(destination, clock.instant()) != null) {
        recovered.add(destination);
      }
    } catch (BatchPublishException e) {
      e.failures().forEach((index, failure) -> failures.put(sendable.get(index).id(), failure));
      boolean allRetriable = e.failures().values().stream().allMatch(BrokerException::isRetriable);
      if (e.failures().size() < sendable.size()) {
        answered = true;
        if (outages.succeeded(destination, clock.instant()) != null) {
          recovered.add(destination);
        }
      } else if (allRetriable) {
        whole = e.failures().values().iterator().next();
      }
    } catch (BrokerException e) {
      sendable.forEach(row -> failures.put(row.id(), e));
      if (e.isRetriable()) {
        whole = e;
      }
    } finally {
      if (whole != null) {
        outages.failed(destination, whole, clock.instant());
      } else if (!answered) {
        outages.probeAbandoned(destination); // a permanent error, or an unexpected one
      }
    }
  }
}
