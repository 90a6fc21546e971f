package dev.postbox.runtime.relay;

import dev.postbox.runtime.api.OutboxRow;
import dev.postbox.runtime.checkpoint.Checkpoint;
import dev.postbox.runtime.checkpoint.Checkpoints;
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
   * @param probed rows sent in a call that found (or confirmed) their destination out, with when to
   *     try them again: the outage's next probe, not the row's own back-off (an attempt each)
   */
  record Outcome(
      Map<Long, BrokerException> failures,
      Map<Long, Instant> held,
      Set<String> recovered,
      Map<Long, Instant> probed) {}

  /**
   * Publishes the batch per destination, keeping each key's order; no transaction is open
   * meanwhile. The batch may hold several partitions' rows (a relay turn), each partition's in id
   * order.
   */
  Outcome publish(List<OutboxRow> batch) {
    Map<Long, BrokerException> failures = new HashMap<>();
    Map<Long, Instant> held = new HashMap<>();
    Set<String> recovered = new HashSet<>();
    Map<Long, Instant> probed = new HashMap<>();
    Map<String, BrokerException> failedKeys = new HashMap<>();
    for (List<OutboxRow> group : inWaves(batch)) {
      publishGroup(
          group.get(0).destination(), group, failures, held, recovered, probed, failedKeys);
    }
    return new Outcome(failures, held, recovered, probed);
  }

  /**
   * The broker calls of a batch, in order: one per destination per wave. A row joins the wave of
   * its key's previous row if that row has the same destination, else the next wave; so a key's
   * rows are sent in batch order, also when they alternate between destinations, and rows of other
   * keys (other partitions, typically) share a call with them whatever their place in the batch.
   * Rows without a key go in the first wave.
   */
  static List<List<OutboxRow>> inWaves(List<OutboxRow> batch) {
    Map<String, Integer> waveOfKey = new HashMap<>();
    Map<String, String> destinationOfKey = new HashMap<>();
    List<Map<String, List<OutboxRow>>> waves = new ArrayList<>();
    for (OutboxRow row : batch) {
      int wave = 0;
      if (row.key() != null) {
        Integer last = waveOfKey.get(row.key());
        if (last != null) {
          wave = row.destination().equals(destinationOfKey.get(row.key())) ? last : last + 1;
        }
        waveOfKey.put(row.key(), wave);
        destinationOfKey.put(row.key(), row.destination());
      }
      while (waves.size() <= wave) {
        waves.add(new java.util.LinkedHashMap<>());
      }
      waves.get(wave).computeIfAbsent(row.destination(), d -> new ArrayList<>()).add(row);
    }
    List<List<OutboxRow>> calls = new ArrayList<>();
    waves.forEach(w -> calls.addAll(w.values()));
    return calls;
  }

  /** One destination's run of rows: sends what may go, records what failed, by row and by key. */
  private void publishGroup(
      String destination,
      List<OutboxRow> group,
      Map<Long, BrokerException> failures,
      Map<Long, Instant> held,
      Set<String> recovered,
      Map<Long, Instant> probed,
      Map<String, BrokerException> failedKeys) {
    try {
      sendGroup(destination, group, failures, held, recovered, probed, failedKeys);
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
      Map<Long, Instant> probed,
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
        Instant next = outages.failed(destination, whole, clock.instant()).nextProbe();
        sendable.forEach(row -> probed.put(row.id(), next));
      } else if (!answered) {
        outages.probeAbandoned(destination); // a permanent error, or an unexpected one
      }
    }
  }
}
