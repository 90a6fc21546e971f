package dev.postbox.runtime.inbox;

import dev.postbox.runtime.api.DeadLetterReason;
import dev.postbox.runtime.checkpoint.Checkpoint;
import dev.postbox.runtime.checkpoint.Checkpoints;
import dev.postbox.runtime.common.Fingerprint;
import dev.postbox.spi.Envelope;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
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
   * The batch path: one round trip records every event, then the handlers run for the new ones. In
   * sequenced mode the events whose key has an open dead letter are parked first, in one query for
   * the batch's keys.
   */
  List<Outcome> handleAll(Connection c, List<Item> items, Set<String> recheck) throws SQLException {
    if (!settings.sequenced()) {
      return recordAndHandle(c, items, recheck);
    }
    Set<String> keys = new java.util.HashSet<>();
    for (Item item : items) {
      if (item.envelope.key() != null) {
        keys.add(item.envelope.key());
      }
    }
    Map<String, Long> blocked = holds.openLetterKeys(c, settings.subscription(), keys);
    if (blocked.isEmpty()) {
      return recordAndHandle(c, items, recheck);
    }
    Outcome[] out = new Outcome[items.size()];
    List<Item> rest = new ArrayList<>();
    List<Integer> restAt = new ArrayList<>();
    for (int i = 0; i < items.size(); i++) {
      Item item = items.get(i);
      Long blocker = item.envelope.key() == null ? null : blocked.get(item.envelope.key());
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
      List<Outcome> handled = recordAndHandle(c, rest, recheck);
      for (int j = 0; j < rest.size(); j++) {
        out[restAt.get(j)] = handled.get(j);
      }
    }
    return List.of(out);
  }

  /**
   * Stores the event as a PARKED letter behind its key's open letter, without recording it in the
   * inbox: its replay records and handles it, in its turn.
   */
  private void park(Connection c, Item item, long blocker) throws SQLException {
    letters.deadLetter(
        c,
        settings.subscription(),
        item.envelope,
        DeadLetterReason.PARKED,
        "parked behind dead letter "
            + blocker
            + " of key '"
            + item.envelope.key()
            + "' (sequenced subscription): replayed once the letters before it are settled",
        item.delivery.attempt(),
        Map.of(),
        null,
        item.delivery.metadata(),
        clock.instant());
  }

  private List<Outcome> recordAndHandle(Connection c, List<Item> items, Set<String> recheck)
      throws SQLException {
    List<Envelope> events = new ArrayList<>(items.size());
    List<String> fingerprints = new ArrayList<>(items.size());
    for (Item item : items) {
      events.add(item.envelope);
      fingerprints.add(Fingerprint.of(item.envelope.payload()));
    }
    boolean deferred = settings.deferred();
    boolean[] fresh =
        repo.recordAll(
            c, settings.subscription(), events, fingerprints, !deferred, clock.instant());
    List<Outcome> out = new ArrayList<>(items.size());
    List<Envelope> queued = new ArrayList<>();
    List<Map<String, String>> queuedMetadata = new ArrayList<>();
    for (int i = 0; i < items.size(); i++) {
      if (!fresh[i]) {
        out.add(duplicateOrConflict(c, items.get(i), fingerprints.get(i)));
      } else if (deferred) {
        queued.add(items.get(i).envelope);
        queuedMetadata.add(items.get(i).delivery.metadata());
        out.add(Outcome.RECEIVED);
      } else {
        out.add(runHandler(c, items.get(i).envelope));
      }
    }
    if (!queued.isEmpty()) {
      recheck.addAll(
          pending.enqueueAll(c, settings.subscription(), queued, queuedMetadata, clock.instant()));
    }
    countDuplicates(c, out);
    return out;
  }

  /** One event: the path of a transaction of its own. */
  Outcome handleOne(Connection c, Item item, Set<String> recheck) throws SQLException {
    if (settings.deferred() || settings.sequenced()) {
      return handleAll(c, List.of(item), recheck).get(0);
    }
    String fingerprint = Fingerprint.of(item.envelope.payload());
    if (repo.record(c, settings.subscription(), item.envelope, fingerprint, clock.instant())) {
      return runHandler(c, item.envelope);
    }
    Outcome outcome = duplicateOrConflict(c, item, fingerprint);
    countDuplicates(c, List.of(outcome));
    return outcome;
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
        Map.of(),
        null,
        item.delivery.metadata(),
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
        e,
        DeadLetterReason.CONFLICT,
        "event id "
            + e.id()
            + " was processed before with another payload (fingerprint "
            + recorded
            + ")",
        item.delivery.attempt(),
        Map.of(),
        null,
        item.delivery.metadata(),
        clock.instant());
    return Outcome.CONFLICT;
  }
}
