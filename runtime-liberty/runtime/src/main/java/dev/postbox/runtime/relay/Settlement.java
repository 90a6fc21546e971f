package dev.postbox.runtime.relay;

import dev.postbox.runtime.api.OutboxRow;
import dev.postbox.runtime.api.RelayListener;
import dev.postbox.runtime.outbox.OutboxRepository;
import dev.postbox.spi.BrokerException;
import java.lang.System.Logger.Level;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The second transaction of a relay batch: marks what the broker accepted dispatched, reschedules
 * retriable failures with back-off, parks permanent ones as FAILED, and postpones rows held by an
 * outage. A row held back behind an earlier row of its key is left as it was.
 */
final class Settlement {

  private static final System.Logger LOG = System.getLogger(Relay.class.getName());

  private final OutboxRepository rows;
  private final RelaySettings settings;
  private final Clock clock;
  private final RelayListener listener;

  Settlement(OutboxRepository rows, RelaySettings settings, Clock clock, RelayListener listener) {
    this.rows = rows;
    this.settings = settings;
    this.clock = clock;
    this.listener = listener;
  }

  void settle(
      Connection c, List<OutboxRow> batch, BatchSender.Outcome outcome, List<OutboxRow> done)
      throws SQLException {
    Instant now = clock.instant();
    Set<String> stoppedKeys = new HashSet<>();
    List<Long> dispatched = new ArrayList<>();
    Map<Instant, List<Long>> held = new HashMap<>();
    Map<Instant, String> heldError = new HashMap<>();
    for (OutboxRow row : batch) {
      BrokerException failure = outcome.failures().get(row.id());
      if (failure == null) {
        dispatched.add(row.id());
        done.add(row);
        continue;
      }
      if (row.key() != null && stoppedKeys.contains(row.key())) {
        continue; // held back behind an earlier row of its key: not an attempt of its own
      }
      if (row.key() != null) {
        stoppedKeys.add(row.key());
      }
      String error = failure.getClass().getSimpleName() + ": " + failure.getMessage();
      Instant heldUntil = outcome.held().get(row.id());
      if (heldUntil != null) {
        // Not sent, its destination being out: no attempt of its own; due at the next probe.
        held.computeIfAbsent(heldUntil, t -> new ArrayList<>()).add(row.id());
        heldError.putIfAbsent(heldUntil, error);
        continue;
      }
      int attempts = row.attempts() + 1;
      // Only a permanent error parks a row: a retriable one (the broker down or slow) retries at
      // the capped back-off for as long as it takes, so an outage never parks the backlog.
      boolean park = !failure.isRetriable();
      if (park) {
        rows.fail(c, row.id(), attempts, error, now);
      } else {
        if (attempts % settings.retry().maxAttempts() == 0) {
          // Still retriable after this many tries: say so, in case the cause never heals (a
          // misrouted destination); the operator can discard a failing PENDING row.
          LOG.log(
              Level.WARNING,
              "outbox row "
                  + row.id()
                  + " (event "
                  + row.eventId()
                  + " to '"
                  + row.destination()
                  + "') has failed "
                  + attempts
                  + " times and keeps retrying, at most every "
                  + settings.retry().maxDelay()
                  + "; if the cause cannot heal, discard it (OutboxAdmin.discard). Last error: "
                  + error);
        }
        // A call that found its destination out: tried again at the outage's next probe (the
        // outage's back-off), not after the row's own, which may be far longer; once the broker
        // answers, the rows of the destination are due at once anyway (Relay.resume).
        Instant probeAgain = outcome.probed().get(row.id());
        rows.reschedule(
            c,
            row.id(),
            attempts,
            probeAgain != null ? probeAgain : now.plus(settings.retry().delayAfter(attempts)),
            error);
      }
      listener.failed(row, error, park);
    }
    for (Map.Entry<Instant, List<Long>> h : held.entrySet()) {
      rows.postpone(c, h.getValue(), h.getKey(), heldError.get(h.getKey()));
    }
    rows.dispatched(c, dispatched, now, settings.deleteOnDispatch());
  }
}
