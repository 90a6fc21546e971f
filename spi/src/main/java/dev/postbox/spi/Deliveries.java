package dev.postbox.spi;

import java.time.Duration;
import java.util.Objects;

/** Checks that adapters share when settling deliveries. */
public final class Deliveries {

  private Deliveries() {}

  /**
   * The nack delay, if it is within {@code [0, max]}.
   *
   * @throws NullPointerException the delay is null
   * @throws IllegalArgumentException the delay is negative or longer than {@code max}
   */
  public static Duration requireNackDelay(Duration delay, Duration max) {
    Objects.requireNonNull(delay, "delay");
    if (delay.isNegative() || delay.compareTo(max) > 0) {
      throw new IllegalArgumentException("nack delay " + delay + " is outside [0, " + max + "]");
    }
    return delay;
  }
}
