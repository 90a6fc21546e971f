package dev.postbox.runtime.common;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Exponential back-off with jitter for retriable publish failures, per row.
 *
 * @param maxAttempts the inbox's attempts before a dead letter; the relay retries retriable errors
 *     without limit (a broker outage must never park its backlog) and parks only on permanent ones
 * @param initialDelay delay after the first failure
 * @param maxDelay cap on any delay
 * @param jitter fraction (0–1) by which each delay is randomly shortened, so rows that failed
 *     together do not retry together
 */
public record RetryPolicy(
    int maxAttempts, Duration initialDelay, Duration maxDelay, double jitter) {

  public RetryPolicy {
    if (maxAttempts < 1) {
      throw new IllegalArgumentException("maxAttempts must be >= 1");
    }
    if (initialDelay.isNegative() || maxDelay.compareTo(initialDelay) < 0) {
      throw new IllegalArgumentException("need 0 <= initialDelay <= maxDelay");
    }
    if (jitter < 0 || jitter > 1) {
      throw new IllegalArgumentException("jitter must be within [0, 1]");
    }
  }

  public static RetryPolicy defaults() {
    return new RetryPolicy(10, Duration.ofSeconds(1), Duration.ofMinutes(5), 0.2);
  }

  /** The delay before attempt {@code attempt + 1}, after {@code attempt} failures (>= 1). */
  public Duration delayAfter(int attempt) {
    double base = initialDelay.toMillis() * Math.pow(2, Math.min(attempt - 1, 30));
    double capped = Math.min(base, maxDelay.toMillis());
    double jittered = capped * (1 - jitter * ThreadLocalRandom.current().nextDouble());
    return Duration.ofMillis((long) jittered);
  }
}
