package dev.postbox.runtime.api;

import java.time.Instant;
import java.util.List;

/**
 * Hears what the relay did, for metrics, benchmarks and tracing. Called on relay threads; keep it
 * cheap.
 */
public interface RelayListener {

  /** A claimed batch is about to be published (the broker calls follow on this thread). */
  default void publishing(List<OutboxRow> batch) {}

  /** Rows were published and their transaction committed at {@code committedAt}. */
  default void published(List<OutboxRow> rows, Instant committedAt) {}

  /** A row's publish failed; {@code parked} when it is now FAILED. */
  default void failed(OutboxRow row, String error, boolean parked) {}

  /**
   * A batch of the partition was published, but before its rows were marked this instance had lost
   * the partition's lease (a pause longer than the lease, e.g. a stop-the-world or SIGSTOP): it
   * marked nothing, and the partition's new owner publishes the rows again (copies the inbox
   * skips).
   */
  default void fenced(int partition, List<OutboxRow> rows) {}

  /** Claimed rows were past their expiry ({@code expirytime}): marked EXPIRED, never published. */
  default void expired(List<OutboxRow> rows) {}

  RelayListener NONE = new RelayListener() {};
}
