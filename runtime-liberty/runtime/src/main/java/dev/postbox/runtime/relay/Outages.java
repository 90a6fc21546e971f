package dev.postbox.runtime.relay;

import dev.postbox.runtime.common.RetryPolicy;
import dev.postbox.spi.BrokerException;
import dev.postbox.spi.RetriableBrokerException;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Destinations the broker does not serve right now, per relay instance: a circuit breaker.
 *
 * <p>A destination is out when a whole publish to it failed with retriable errors (nothing went
 * through). While it is out, one call at a time tries it again (the probe), after a back-off that
 * grows with each failed try up to the probe interval; every other batch for it is held without
 * calling the broker, so an outage costs one broker timeout per probe, not one per batch or key.
 * The first publish that goes through ends the outage. A partial failure (some rows went through)
 * is a problem of those rows, not of the destination.
 */
final class Outages {

  private static final System.Logger LOG = System.getLogger(Outages.class.getName());

  /**
   * One destination's outage.
   *
   * @param since when its first failed publish happened
   * @param failures failed tries since then
   * @param nextProbe when the next try may start
   * @param probing when the try under way started, or null when none is
   * @param error the last try's error
   */
  record Outage(Instant since, int failures, Instant nextProbe, Instant probing, String error) {

    /** When rows held by this outage may be tried again: never in the past (no hot loop). */
    Instant heldUntil(Instant now, Duration interval) {
      return probing != null || !nextProbe.isAfter(now) ? now.plus(interval) : nextProbe;
    }
  }

  /** What a batch for a destination that is out is told instead of being sent. */
  static RetriableBrokerException held(String destination, Outage outage) {
    return new RetriableBrokerException(
        "not sent: destination '"
            + destination
            + "' has been unavailable since "
            + outage.since()
            + " ("
            + outage.failures()
            + " failed tries; next try at "
            + outage.nextProbe()
            + "). Last error: "
            + outage.error());
  }

  private final RetryPolicy backOff;
  private final Duration maxInterval;
  private final Map<String, Outage> open = new ConcurrentHashMap<>();

  Outages(RetryPolicy backOff, Duration maxInterval) {
    this.backOff = backOff;
    this.maxInterval = maxInterval;
  }

  /**
   * Whether a publish to the destination must wait: null if it may call the broker now (no outage,
   * or it becomes the probe), else the outage that holds it.
   */
  Outage hold(String destination, Instant now) {
    Outage[] held = new Outage[1];
    open.computeIfPresent(
        destination,
        (d, o) -> {
          boolean probeUnderWay =
              o.probing() != null && now.isBefore(o.probing().plus(probeDeadline()));
          if (probeUnderWay || now.isBefore(o.nextProbe())) {
            held[0] = o;
            return o;
          }
          // no probe, or one that hung past its deadline: this call probes
          return new Outage(o.since(), o.failures(), o.nextProbe(), now, o.error());
        });
    return held[0];
  }

  /** How long a probe may take before another call may probe: a broker call that hangs. */
  private Duration probeDeadline() {
    Duration d = maxInterval.multipliedBy(6);
    return d.compareTo(Duration.ofMinutes(2)) < 0 ? Duration.ofMinutes(2) : d;
  }

  /** The longest wait between two probes. */
  Duration interval() {
    return maxInterval;
  }

  /**
   * A whole publish to the destination failed with retriable errors; returns the outage, whose
   * {@link Outage#nextProbe()} is when the failed rows may be tried again.
   */
  Outage failed(String destination, BrokerException error, Instant now) {
    String why = error.getClass().getSimpleName() + ": " + error.getMessage();
    Outage o =
        open.compute(
            destination,
            (d, before) -> {
              int failures = before == null ? 1 : before.failures() + 1;
              Duration wait = backOff.delayAfter(failures);
              if (wait.compareTo(maxInterval) > 0) {
                wait = maxInterval;
              }
              return new Outage(
                  before == null ? now : before.since(), failures, now.plus(wait), null, why);
            });
    if (o.failures() == 1) {
      LOG.log(
          Level.WARNING,
          "broker unavailable for destination '"
              + destination
              + "': "
              + why
              + ". Its outbox rows wait (recorded, not lost) and one try at a time probes it, at"
              + " least every "
              + maxInterval
              + "; requests that record events are not affected.");
    }
    return o;
  }

  /** A publish to the destination went through (wholly or in part); ends its outage, if any. */
  Outage succeeded(String destination, Instant now) {
    Outage ended = open.remove(destination);
    if (ended != null) {
      LOG.log(
          Level.INFO,
          "broker available again for destination '"
              + destination
              + "' after "
              + Duration.between(ended.since(), now).toSeconds()
              + " s and "
              + ended.failures()
              + " failed tries; its waiting rows go now");
    }
    return ended;
  }

  /** A probe ended without an answer either way (say, the batch was interrupted): let another. */
  void probeAbandoned(String destination) {
    open.computeIfPresent(
        destination, (d, o) -> new Outage(o.since(), o.failures(), o.nextProbe(), null, o.error()));
  }

  /**
   * The destinations out now, with their outages. An outage nobody has probed for three intervals
   * past its due probe is dropped: this instance no longer has rows for that destination (they
   * moved to another instance, or were discarded), so it cannot know, and must not keep saying,
   * that the destination is out.
   */
  Map<String, Outage> snapshot(Instant now) {
    Duration idle = maxInterval.multipliedBy(3);
    open.values().removeIf(o -> o.probing() == null && now.isAfter(o.nextProbe().plus(idle)));
    return Map.copyOf(open);
  }
}
