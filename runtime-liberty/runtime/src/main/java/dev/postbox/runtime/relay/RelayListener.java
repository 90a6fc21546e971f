package dev.postbox.runtime.relay;

import dev.postbox.runtime.outbox.OutboxRow;
import java.time.Instant;
import java.util.List;

/** Hears what the relay did, for metrics and benchmarks. Called on relay threads; keep it cheap. */
public interface RelayListener {

  /** Rows were published and their transaction committed at {@code committedAt}. */
  default void published(List<OutboxRow> rows, Instant committedAt) {}

  /** A row's publish failed; {@code parked} when it is now FAILED. */
  default void failed(OutboxRow row, String error, boolean parked) {}

  RelayListener NONE = new RelayListener() {};
}
