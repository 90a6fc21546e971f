package dev.postbox.runtime.inbox;

import dev.postbox.runtime.db.Transactions;
import dev.postbox.spi.Broker;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Takes the inbox's health reading: a broker ping, a database round trip (which counts each
 * subscription's open dead letters and parked events), and each subscription's failing or stuck
 * loop. Logs when a subscription becomes stuck and when it moves again.
 */
final class InboxHealthReader {

  private static final System.Logger LOG = System.getLogger(InboxHealthReader.class.getName());

  private final Broker broker;
  private final Transactions tx;
  private final DeadLetterRepository letters;
  private final Duration stuckAfter;
  private final Set<String> reportedStuck = ConcurrentHashMap.newKeySet();

  InboxHealthReader(
      Broker broker, Transactions tx, DeadLetterRepository letters, Duration stuckAfter) {
    this.broker = broker;
    this.tx = tx;
    this.letters = letters;
    this.stuckAfter = stuckAfter;
  }

  /** Broker ping and a database round trip, every few seconds, for readiness. */
  InboxHealth read(Collection<RunningSubscription> running) {
    Boolean brokerUp;
    String brokerError = null;
    try {
      broker.ping(Duration.ofSeconds(3));
      brokerUp = true;
    } catch (UnsupportedOperationException cannotTell) {
      brokerUp = null;
    } catch (RuntimeException e) {
      brokerUp = false;
      brokerError = e.getMessage();
    }
    String dbError = null;
    Map<String, Long> depths = new LinkedHashMap<>();
    Map<String, InboxHealth.OpenLetters> letters = Map.of();
    try {
      for (RunningSubscription r : running) {
        depths.put(r.name(), r.queue.depth()); // deferred: every event; inline: retries
      }
      // also the database round trip of the reading
      letters = tx.inTransaction(this.letters::openLetterCounts);
    } catch (RuntimeException e) {
      dbError = e.toString();
    }
    Map<String, String> failing = new LinkedHashMap<>();
    for (RunningSubscription r : running) {
      r.loop
          .failingFor()
          .filter(d -> d.compareTo(InboxEngine.RESUBSCRIBE_AFTER) >= 0)
          .ifPresent(
              d ->
                  failing.put(
                      r.name(), "failing for " + d.toSeconds() + " s: " + r.loop.lastError()));
      noteStall(r, failing);
    }
    return new InboxHealth(
        brokerUp,
        brokerError,
        dbError,
        Collections.unmodifiableMap(depths),
        Collections.unmodifiableMap(failing),
        letters);
  }

  private void noteStall(RunningSubscription r, Map<String, String> failing) {
    String subscription = r.name();
    Optional<Duration> stuck = r.stuckFor().filter(d -> d.compareTo(stuckAfter) >= 0);
    if (stuck.isPresent()) {
      failing.put(
          subscription,
          "stuck for "
              + stuck.get().toSeconds()
              + " s: a delivery has been neither acknowledged nor dead-lettered (see"
              + " postbox.inbox.stuck-after)");
      if (reportedStuck.add(subscription)) {
        LOG.log(
            Level.WARNING,
            "Postbox inbox subscription "
                + subscription
                + " is stuck: a delivery has waited "
                + stuck.get().toSeconds()
                + " s without being acknowledged or dead-lettered (retried or redelivered"
                + " over and over); readiness is DOWN until it moves");
      }
    } else if (reportedStuck.remove(subscription)) {
      LOG.log(Level.INFO, "Postbox inbox subscription " + subscription + " moves again");
    }
  }
}
