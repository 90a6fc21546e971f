package dev.postbox.runtime.inbox;

import dev.postbox.runtime.api.DeadLetter;
import dev.postbox.runtime.api.DeadLetterReason;
import dev.postbox.runtime.api.NotReplayableException;
import dev.postbox.runtime.common.Fingerprint;
import dev.postbox.runtime.db.Transactions;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.InvalidEventException;
import java.time.Clock;
import java.time.Duration;
import java.util.Optional;

/**
 * Replays one dead letter through the same idempotent path as a delivery: its event recorded under
 * (subscription, event id) with the handler's writes, and the letter settled, in one transaction,
 * so a replay can never add a second effect. Refuses (with {@link NotReplayableException}) a letter
 * that is not open, waits behind an earlier letter of its key (sequenced), is a CONFLICT or older
 * than the dedup window (without force), or holds an event no stage can carry now. A part of the
 * inbox: {@link DeadLetters} runs it for the operator, the re-drive and the sequenced release.
 */
final class LetterReplay {

  private final Transactions tx;
  private final InboxRepository repo;
  private final DeadLetterRepository letters;
  private final LetterHoldRepository holds;
  private final String subscription;
  private final InboxHandler handler;
  private final Clock clock;
  private final Duration dedupWindow;
  private final boolean sequenced;

  LetterReplay(
      Transactions tx,
      InboxRepository repo,
      DeadLetterRepository letters,
      LetterHoldRepository holds,
      String subscription,
      InboxHandler handler,
      Clock clock,
      Duration dedupWindow,
      boolean sequenced) {
    this.tx = tx;
    this.repo = repo;
    this.letters = letters;
    this.holds = holds;
    this.subscription = subscription;
    this.handler = handler;
    this.clock = clock;
    this.dedupWindow = dedupWindow;
    this.sequenced = sequenced;
  }

  /**
   * @param conflict why the letter became a CONFLICT letter instead (its event was processed under
   *     its id with another payload), or null
   */
  record Replayed(boolean ran, String key, String conflict) {}

  Replayed replayOne(long id, boolean force) {
    return tx.inTransaction(
        c -> {
          DeadLetter dl =
              letters
                  .deadLetter(c, id, true)
                  .orElseThrow(() -> new NotReplayableException("no dead letter " + id));
          if (!"OPEN".equals(dl.status()) || !dl.subscription().equals(subscription)) {
            throw new NotReplayableException(
                "dead letter " + id + " is " + dl.status() + " in " + dl.subscription());
          }
          if (!dl.replayable()) {
            throw new NotReplayableException(
                "dead letter " + id + " (" + dl.reason() + ") holds no whole event to replay");
          }
          if (sequenced && dl.key() != null) {
            Optional<DeadLetter> earlier = holds.firstHolding(c, subscription, dl.key(), id);
            if (earlier.isPresent()) {
              throw new NotReplayableException(
                  "dead letter "
                      + id
                      + " waits behind dead letter "
                      + earlier.get().id()
                      + " of key '"
                      + dl.key()
                      + "' (sequenced subscription): replay or discard that one first");
            }
          }
          if (!force && dl.reason() == DeadLetterReason.CONFLICT) {
            throw new NotReplayableException(
                "dead letter "
                    + id
                    + " is a CONFLICT: its payload differs from the one processed under event id "
                    + dl.eventId()
                    + "; replaying it runs this conflicting payload if the inbox no longer"
                    + " remembers the id. Replay it only deliberately (force)");
          }
          if (!force
              && dedupWindow != null
              && dl.createdAt().isBefore(clock.instant().minus(dedupWindow))) {
            throw new NotReplayableException(
                "dead letter "
                    + id
                    + " is older than the dedup window ("
                    + dedupWindow
                    + "): the inbox no longer knows whether event "
                    + dl.eventId()
                    + " was processed meanwhile. Replay it only deliberately (force)");
          }
          Envelope e;
          try {
            e = dl.envelope();
          } catch (InvalidEventException stale) {
            throw new NotReplayableException(
                "dead letter "
                    + id
                    + " holds an event stored before this version's event rules, which no broker"
                    + " or database stage carries now ("
                    + stale.getMessage()
                    + "): discard it");
          }
          String fingerprint = Fingerprint.of(e.payload());
          boolean fresh = repo.record(c, subscription, e, fingerprint, clock.instant());
          if (fresh) {
            HandlerCall.run(handler, c, e);
          } else if (dl.reason() != DeadLetterReason.CONFLICT) {
            // (A CONFLICT letter replayed with force is the operator closing it: settled below.)
            String processed = repo.fingerprint(c, subscription, e.id()).orElse(fingerprint);
            if (!processed.equals(fingerprint)) {
              // Processed meanwhile, with another payload: this letter's was never applied, and
              // settling it as REPLAYED would hide that.
              String why =
                  "dead letter "
                      + id
                      + " became a CONFLICT: event id "
                      + e.id()
                      + " was processed with another payload (fingerprint "
                      + processed
                      + "); this letter's payload was never applied";
              letters.conflicted(c, id, why, clock.instant());
              return new Replayed(false, dl.key(), why);
            }
          }
          letters.settleDeadLetter(c, id, "REPLAYED", clock.instant());
          return new Replayed(fresh, dl.key(), null);
        });
  }
}
