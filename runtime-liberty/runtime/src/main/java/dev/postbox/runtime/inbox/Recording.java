package dev.postbox.runtime.inbox;

import dev.postbox.runtime.api.DeadLetterReason;
import dev.postbox.runtime.checkpoint.Checkpoint;
import dev.postbox.runtime.checkpoint.Checkpoints;
import dev.postbox.runtime.common.Fingerprint;
import dev.postbox.spi.Envelope;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Inside one inbox transaction: each event recorded under (subscription, event id); a new one runs
 * its handler (inline) or is queued for a worker (deferred); a copy with the recorded payload is a
 * duplicate, counted durably in the same transaction; a copy with another payload is a conflict,
 * dead-lettered. The caller commits, then settles each delivery by its {@link Outcome}.
 */
final class Recording {

  /** What became of an event in its transaction. */
  enum Outcome {
    PROCESSED,
    RECEIVED,
    DUPLICATE,
    CONFLICT,
    /** Sequenced mode: its key had an open dead letter; stored as a PARKED letter behind it. */
    PARKED
  }

  private final InboxRepository repo;
  private final DeadLetterRepository letters;
  private final LetterHoldRepository holds;
  private final PendingEventRepository pending;
  private final InboxSettings settings;
  private final InboxHandler handler;
  private final Clock clock;

  Recording(
      InboxRepository repo,
      DeadLetterRepository letters,
      LetterHoldRepository holds,
      PendingEventRepository pending,
      InboxSettings settings,
      InboxHandler handler,
      Clock clock) {
    this.repo = repo;
    this.letters = letters;
    this.holds = holds;
    this.pending = pending;
    this.settings = settings;
    this.handler = handler;
    this.clock = clock;
  }

  /**
   * The batch path: one round trip records every event, then the handlers run for the new ones.
   * First, one look-up for the batch's keys tells which are held ({@link HeldKeys}): an event of a
   * key with queued events (an earlier one failed and waits for its retry) is queued behind them,
   * to run in its turn from the database; in sequenced mode an event of a key with an open dead
   * letter is parked behind it.
   */
  List<Outcome> handleAll(Connection c, List<Item> items, Set<String> recheck) throws SQLException {
    HeldKeys held =
        settings.deferred()
            ? HeldKeys.NONE
            : HeldKeys.lookup(
                c, settings.subscription(), settings.sequenced(), holds, keysOf(items));
    if (held.byLetter().isEmpty()) {
      return recordAndHandle(c, items, recheck, held.byQueue());
    }
    Outcome[] out = new Outcome[items.size()];
    List<Item> rest = new ArrayList<>();
    List<Integer> restAt = new ArrayList<>();
    for (int i = 0; i < items.size(); i++) {
      Item item = items.get(i);
      Long blocker = item.envelope.key() == null ? null : held.byLetter().get(item.envelope.key());
      if (blocker != null) {
        // A copy of an event the inbox already holds is a duplicate or a conflict, as always:
        // parking it would let its replay, after the dedup window, run it a second time.
        String fingerprint = Fingerprint.of(item.envelope.payload());
        Optional<Map.Entry<Long, byte[]>> letter;
        if (repo.fingerprint(c, settings.subscription(), item.envelope.id()).isPresent()) {
          out[i] = duplicateOrConflict(c, item, fingerprint);
          countDuplicates(c, List.of(out[i]));
        } else if ((letter = holds.openLetterOf(c, settings.subscription(), item.envelope.id()))
            .isPresent()) {
          // A copy of an event that is itself an open letter (dead-lettered, or parked): never a
          // second letter, which would run it once the first is settled, a discard included.
          out[i] = copyOfALetter(c, item, fingerprint, letter.get());
          countDuplicates(c, List.of(out[i]));
        } else {
          park(c, item, blocker);
          out[i] = Outcome.PARKED;
        }
      } else {
        rest.add(item);
        restAt.add(i);
      }
    }
    if (!rest.isEmpty()) {
      List<Outcome> handled = recordAndHandle(c, rest, recheck, held.byQueue());
      for (int j = 0; j < rest.size(); j++) {
        out[restAt.get(j)] = handled.get(j);
      }
    }
    return List.of(out);
  }

  private static Set<String> keysOf(List<Item> items) {
    Set<String> keys = new java.util.HashSet<>();
    for (Item item : items) {
      if (item.envelope.key() != null) {
        keys.add(item.envelope.key());
      }
    }
    return keys;
  }

  /**
   * Stores the event as a PARKED letter behind its key's open letter, without recording it in the
   * inbox: its replay records and handles it, in its turn.
   */
  private void park(Connection c, Item item, long blocker) throws SQLException {
    letters.deadLetter(
        c,
        settings.subscription(),
        LetterDraft.parked(
            item.envelope, blocker, item.delivery.attempt(), item.delivery.metadata()),
        clock.instant());
  }

  /**
   * Records the events and runs the new ones' handlers; the new events of a key in {@code
   * queuedKeys} (every event, in deferred mode) are recorded as received and queued instead.
   */
  private List<Outcome> recordAndHandle(
      Connection c, List<Item> items, Set<String> recheck, Set<String> queuedKeys)
      throws SQLException {
    boolean deferred = settings.deferred();
    boolean[] queue = new boolean[items.size()];
    List<Envelope> inline = new ArrayList<>(items.size());
    List<String> inlinePrints = new ArrayList<>(items.size());
    List<Envelope> behind = new ArrayList<>();
    List<String> behindPrints = new ArrayList<>();
    String[] fingerprints = new String[items.size()];
    for (int i = 0; i < items.size(); i++) {
      Envelope e = items.get(i).envelope;
      fingerprints[i] = Fingerprint.of(e.payload());
      queue[i] = deferred || (e.key() != null && queuedKeys.contains(e.key()));
      (queue[i] ? behind : inline).add(e);
      (queue[i] ? behindPrints : inlinePrints).add(fingerprints[i]);
    }
    Instant now = clock.instant();
    boolean[] freshInline =
        repo.recordAll(c, settings.subscription(), inline, inlinePrints, true, now);
    boolean[] freshBehind =
        repo.recordAll(c, settings.subscription(), behind, behindPrints, false, now);
    List<Outcome> out = new ArrayList<>(items.size());
    List<Envelope> queued = new ArrayList<>();
    List<Map<String, String>> queuedMetadata = new ArrayList<>();
    int in = 0;
    int be = 0;
    for (int i = 0; i < items.size(); i++) {
      boolean fresh = queue[i] ? freshBehind[be++] : freshInline[in++];
      if (!fresh) {
        out.add(duplicateOrConflict(c, items.get(i), fingerprints[i]));
      } else if (queue[i]) {
        queued.add(items.get(i).envelope);
        queuedMetadata.add(items.get(i).delivery.metadata());
        out.add(Outcome.RECEIVED);
      } else {
        out.add(runHandler(c, items.get(i).envelope));
      }
    }
    if (!queued.isEmpty()) {
      recheck.addAll(pending.enqueueAll(c, settings.subscription(), queued, queuedMetadata, now));
    }
    countDuplicates(c, out);
    return out;
  }

  /** One event: the path of a transaction of its own, with the same look-up of held keys. */
  Outcome handleOne(Connection c, Item item, Set<String> recheck) throws SQLException {
    return handleAll(c, List.of(item), recheck).get(0);
  }

  /** Duplicates are counted durably, in the transaction that rejects them. */
  private void countDuplicates(Connection c, List<Outcome> outcomes) throws SQLException {
    long n = outcomes.stream().filter(o -> o == Outcome.DUPLICATE).count();
    if (n > 0) {
      repo.countDuplicates(c, settings.subscription(), n);
    }
  }

  private Outcome runHandler(Connection c, Envelope e) throws SQLException {
    HandlerCall.run(handler, c, e);
    Checkpoints.reach(Checkpoint.INBOX_BEFORE_COMMIT);
    return Outcome.PROCESSED;
  }

  /**
   * Sequenced mode: a delivery whose event id has an open letter. The same payload is a duplicate;
   * another one is a CONFLICT letter (it holds no key, and is never replayed without force).
   */
  private Outcome copyOfALetter(
      Connection c, Item item, String fingerprint, Map.Entry<Long, byte[]> letter)
      throws SQLException {
    String lettered = Fingerprint.of(letter.getValue());
    if (lettered.equals(fingerprint)) {
      return Outcome.DUPLICATE;
    }
    Envelope e = item.envelope;
    letters.deadLetter(
        c,
        settings.subscription(),
        LetterDraft.of(
            e,
            DeadLetterReason.CONFLICT,
            "event id "
                + e.id()
                + " is dead letter "
                + letter.getKey()
                + " with another payload (fingerprint "
                + lettered
                + ")",
            item.delivery.attempt(),
            item.delivery.metadata()),
        clock.instant());
    return Outcome.CONFLICT;
  }

  private Outcome duplicateOrConflict(Connection c, Item item, String fingerprint)
      throws SQLException {
    Envelope e = item.envelope;
    String recorded = repo.fingerprint(c, settings.subscription(), e.id()).orElse(fingerprint);
    if (recorded.equals(fingerprint)) {
      return Outcome.DUPLICATE;
    }
    letters.deadLetter(
        c,
        settings.subscription(),
        LetterDraft.of(
            e,
            DeadLetterReason.CONFLICT,
            "event id "
                + e.id()
                + " was processed before with another payload (fingerprint "
                + recorded
                + ")",
            item.delivery.attempt(),
            item.delivery.metadata()),
        clock.instant());
    return Outcome.CONFLICT;
  }
}
