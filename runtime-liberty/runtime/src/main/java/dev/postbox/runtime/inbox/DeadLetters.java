package dev.postbox.runtime.inbox;

import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Transactions;
import java.time.Clock;
import java.util.List;
import java.util.Optional;

/** The operator's view of one subscription's dead letters: list, inspect, replay, discard. */
public final class DeadLetters {

  private final Transactions tx;
  private final InboxRepository repo;
  private final String subscription;
  private final InboxHandler handler;
  private final Clock clock;

  public DeadLetters(
      Transactions tx, Dialect dialect, String subscription, InboxHandler handler, Clock clock) {
    this.tx = tx;
    this.repo = new InboxRepository(dialect);
    this.subscription = subscription;
    this.handler = handler;
    this.clock = clock;
  }

  /** Open dead letters, oldest first. */
  public List<DeadLetter> open(int limit) {
    return tx.inTransaction(c -> repo.deadLetters(c, subscription, limit));
  }

  public Optional<DeadLetter> get(long id) {
    return tx.inTransaction(c -> repo.deadLetter(c, id, false));
  }

  /**
   * Runs a dead letter's event through the same idempotent path as a delivery: recorded under
   * (subscription, event id) with the handler's writes in one transaction, so a replay can never
   * add a second effect. Marks the letter REPLAYED in that transaction.
   *
   * @return true if the handler ran, false if the event had been processed meanwhile
   * @throws IllegalStateException the letter is not open, or holds no whole event (malformed)
   * @throws RuntimeException the handler failed again; the letter stays open
   */
  public boolean replay(long id) {
    return tx.inTransaction(
        c -> {
          DeadLetter dl =
              repo.deadLetter(c, id, true)
                  .orElseThrow(() -> new IllegalStateException("no dead letter " + id));
          if (!"OPEN".equals(dl.status()) || !dl.subscription().equals(subscription)) {
            throw new IllegalStateException(
                "dead letter " + id + " is " + dl.status() + " in " + dl.subscription());
          }
          if (!dl.replayable()) {
            throw new IllegalStateException(
                "dead letter " + id + " (" + dl.reason() + ") holds no whole event to replay");
          }
          var e = dl.envelope();
          boolean fresh =
              repo.record(
                  c, subscription, e, InboxProcessor.fingerprint(e.payload()), clock.instant());
          if (fresh) {
            try {
              handler.handle(c, e);
            } catch (java.sql.SQLException | RuntimeException rethrow) {
              throw rethrow;
            } catch (Exception checked) {
              throw new InboxProcessor.HandlerException(checked);
            }
          }
          repo.settleDeadLetter(c, id, "REPLAYED", clock.instant());
          return fresh;
        });
  }

  /** Gives up on a dead letter; false if it was not open. */
  public boolean discard(long id) {
    return tx.inTransaction(c -> repo.settleDeadLetter(c, id, "DISCARDED", clock.instant()));
  }
}
