package dev.postbox.runtime.api;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;

/**
 * When an event recorded with {@link Outbox#record(OutboxEvent, Schedule)} is published, and until
 * when it may be. Times are the database's: a delay is added to the database's clock when the event
 * is recorded, and the relay compares due times and expiries with the same clock, so instances
 * whose own clocks disagree still agree.
 *
 * <pre>{@code
 * outbox.record(reminder, Schedule.after(Duration.ofDays(3)));
 * outbox.record(hold, Schedule.at(placedAt.plus(hold)).expiresAfter(Duration.ofHours(1)));
 * outbox.record(quote, Schedule.now().expiresAfter(Duration.ofMinutes(5)));
 * }</pre>
 *
 * @param at the due time, or null for {@code after}
 * @param after the delay from the database's now, or null for {@code at}
 * @param expiresAt the expiry, or null
 * @param expiresAfter the expiry as a time after the due time, or null
 * @param keepKeyOrder whether the scheduled event holds its key's later events back until it is
 *     published (by default it does not: they go out as they come, and it goes at its due time)
 */
public record Schedule(
    Instant at, Duration after, Instant expiresAt, Duration expiresAfter, boolean keepKeyOrder) {

  /** Published as soon as the transaction commits, as {@link Outbox#record(OutboxEvent)} does. */
  public static final Schedule NOW = new Schedule(null, Duration.ZERO, null, null, false);

  /**
   * @throws IllegalArgumentException both or neither of {@code at} and {@code after}, a negative
   *     delay, or both kinds of expiry
   */
  public Schedule {
    if ((at == null) == (after == null)) {
      throw new IllegalArgumentException("a schedule has either a due time or a delay");
    }
    if (after != null && after.isNegative()) {
      throw new IllegalArgumentException("a schedule's delay must not be negative: " + after);
    }
    if (expiresAt != null && expiresAfter != null) {
      throw new IllegalArgumentException("a schedule has one expiry, a time or a duration");
    }
    if (expiresAfter != null && (expiresAfter.isNegative() || expiresAfter.isZero())) {
      throw new IllegalArgumentException("an expiry must be after the due time: " + expiresAfter);
    }
  }

  /** Published when the transaction commits. */
  public static Schedule now() {
    return NOW;
  }

  /** Published at this time (at once if it has passed). */
  public static Schedule at(Instant due) {
    return new Schedule(Objects.requireNonNull(due, "due"), null, null, null, false);
  }

  /** Published this long after the event is recorded, by the database's clock. */
  public static Schedule after(Duration delay) {
    return new Schedule(null, Objects.requireNonNull(delay, "delay"), null, null, false);
  }

  /** Never published, nor handled by an inbox, at or after this time. */
  public Schedule expiresAt(Instant expiry) {
    return new Schedule(at, after, Objects.requireNonNull(expiry, "expiry"), null, keepKeyOrder);
  }

  /** Never published, nor handled by an inbox, this long after its due time or later. */
  public Schedule expiresAfter(Duration ttl) {
    return new Schedule(at, after, null, Objects.requireNonNull(ttl, "ttl"), keepKeyOrder);
  }

  /**
   * Holds the key's events recorded after this one back until this one is published, so the key
   * stays in strict id order, scheduled events included.
   */
  public Schedule inKeyOrder() {
    return new Schedule(at, after, expiresAt, expiresAfter, true);
  }

  /** The due time, recorded at {@code now} (the database's clock): {@code at}, or now + delay. */
  public Instant dueAt(Instant now) {
    return at != null ? at : now.plus(after);
  }

  /** The expiry of the event due at {@code due}, or null when it has none. */
  public Instant expiryAt(Instant due) {
    return expiresAt != null ? expiresAt : expiresAfter == null ? null : due.plus(expiresAfter);
  }

  /** Whether the event is due later than its commit. */
  boolean isDeferred() {
    return at != null || !after.isZero();
  }
}
