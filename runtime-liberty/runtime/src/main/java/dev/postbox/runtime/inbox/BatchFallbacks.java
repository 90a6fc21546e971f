package dev.postbox.runtime.inbox;

import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.function.LongSupplier;

/**
 * Notices when the batch path itself is broken. A batch that fails as a whole is run again one
 * event per transaction; if then every event succeeds, nothing was wrong with the events. Now and
 * then that is a passing conflict. Batch after batch, it is a driver or a dialect that the batch
 * path cannot work with, and every batch silently pays one transaction per event: MariaDB's driver
 * did exactly this to every inbox batch until it was found. So a run of such batches is logged as a
 * warning, with the batch's error, at most once per {@link #WARN_EVERY}.
 */
final class BatchFallbacks {

  private static final System.Logger LOG = System.getLogger(BatchFallbacks.class.getName());

  /** Batches in a row that failed whole while each of their events succeeded alone. */
  static final int IN_A_ROW = 3;

  static final Duration WARN_EVERY = Duration.ofMinutes(5);

  private final String subscription;
  private final LongSupplier nanoTime;
  private int inARow;
  private long total;
  private long lastWarned;
  private boolean warnedOnce;

  BatchFallbacks(String subscription, LongSupplier nanoTime) {
    this.subscription = subscription;
    this.nanoTime = nanoTime;
  }

  /** A batch committed as a whole. */
  synchronized void batchSucceeded() {
    inARow = 0;
  }

  /**
   * A batch failed as a whole, and then each of its events succeeded in a transaction of its own.
   *
   * @return true if this call logged the warning
   */
  synchronized boolean failedWholeButEachSucceededAlone(RuntimeException batchFailure) {
    inARow++;
    total++;
    long now = nanoTime.getAsLong();
    if (inARow < IN_A_ROW || (warnedOnce && now - lastWarned < WARN_EVERY.toNanos())) {
      return false;
    }
    warnedOnce = true;
    lastWarned = now;
    LOG.log(
        Level.WARNING,
        "inbox "
            + subscription
            + ": "
            + inARow
            + " batches in a row failed as a whole while each of their events succeeded alone ("
            + total
            + " so far); every batch is paying one transaction per event. The batch's error: "
            + batchFailure);
    return true;
  }
}
