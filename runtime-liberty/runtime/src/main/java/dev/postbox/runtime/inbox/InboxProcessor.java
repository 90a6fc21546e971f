package dev.postbox.runtime.inbox;

import dev.postbox.runtime.api.DeadLetterReason;
import dev.postbox.runtime.api.InboxListener;
import dev.postbox.runtime.checkpoint.Checkpoint;
import dev.postbox.runtime.checkpoint.Checkpoints;
import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Transactions;
import dev.postbox.runtime.dedup.DedupFront;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;
import java.lang.System.Logger.Level;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;

/**
 * Runs deliveries through the inbox: each event is recorded under (subscription, event id) in the
 * same transaction as the handler's writes; <b>the transaction commits first, and only then is the
 * delivery acknowledged</b>.
 *
 * <ul>
 *   <li>New event → handler runs → commit → ack.
 *   <li>Duplicate (same id, same payload) → skipped → commit → ack, counted.
 *   <li>Same id, different payload → not processed; dead-lettered as {@link
 *       DeadLetterReason#CONFLICT} → ack.
 *   <li>Poison input (malformed, no id, unknown type, oversized) → dead-lettered at once → ack.
 *   <li>Handler failure → rollback; the event is queued in the database with its attempt, in a
 *       transaction of its own → ack; it is retried from there with back-off ({@link FailurePath}),
 *       and after the last attempt dead-lettered with the error.
 *   <li>An event whose key has queued events → recorded and queued behind them → commit → ack: a
 *       key's order through failures is kept in the database ({@link HeldKeys}).
 *   <li>The database cannot be written → nothing more is acknowledged; {@link
 *       InboxUnavailableException} tells the {@link ConsumerLoop} to pause and try the same
 *       deliveries again.
 * </ul>
 *
 * <p>A poll batch is split into lanes by key (with {@link InboxSettings#workers()} above 1); lanes
 * run in parallel and each keeps its order. In batch mode a lane is one transaction whose inbox
 * rows are written in one round trip; if anything in it fails, it is rolled back and processed one
 * by one, so one failing event never holds back the others; a key whose event failed queues its
 * later events behind it. Nothing is dropped silently: every delivery ends processed, duplicate, or
 * dead-lettered.
 *
 * <p>(A little over 300 lines: the lanes, the batch with its one-by-one fallback, and the settling
 * after the commit share one flow; classification, key holds, recording and the failure policy are
 * parts of their own.)
 */
final class InboxProcessor {

  private static final System.Logger LOG = System.getLogger(InboxProcessor.class.getName());

  private final Transactions tx;
  private final InboxRepository repo;
  private final PendingEventRepository pending;
  private final InboxSettings settings;
  private final Clock clock;
  private final InboxListener listener;
  private final ExecutorService workers;
  private final BatchFallbacks fallbacks;
  private final DedupFront front;
  private final FailurePath failures;
  private final Classifier classifier;
  private final Recording recording;

  /**
   * @param workers runs the lanes of a batch in parallel when {@link InboxSettings#workers()} is
   *     above 1 (a managed executor in an application server); null runs everything on the calling
   *     thread
   */
  public InboxProcessor(
      Transactions tx,
      Dialect dialect,
      InboxSettings settings,
      InboxHandler handler,
      Clock clock,
      InboxListener listener,
      ExecutorService workers) {
    this.tx = tx;
    this.repo = new InboxRepository(dialect);
    this.pending = new PendingEventRepository(dialect);
    this.settings = settings;
    this.clock = clock;
    this.listener = listener;
    this.workers = workers;
    this.fallbacks = new BatchFallbacks(settings.subscription(), System::nanoTime);
    // Inline mode only: there a commit means processed. A deferred receiver's commit only queues
    // the event, which may still end as a dead letter whose redelivery must run again.
    this.front =
        settings.front() == null || settings.deferred()
            ? null
            : DedupFront.of(settings.front().window(), settings.front().maxIds(), clock);
    DeadLetterRepository letters = new DeadLetterRepository(dialect);
    this.failures = new FailurePath(tx, repo, letters, pending, settings, clock, listener);
    this.classifier = new Classifier(settings, front != null, clock);
    this.recording =
        new Recording(
            repo, letters, new LetterHoldRepository(dialect), pending, settings, handler, clock);
  }

  /** The dedup front, for its metrics; null when the settings have none. */
  public DedupFront front() {
    return front;
  }

  /** Processes one poll batch; every delivery is settled when this returns. */
  public void process(List<Delivery> deliveries) {
    int lanes = Math.min(settings.workers(), deliveries.size());
    if (lanes <= 1 || workers == null) {
      guardedLane(deliveries);
      return;
    }
    InboxUnavailableException unavailable = null;
    List<List<Delivery>> split = lanes(deliveries, lanes);
    List<Future<?>> running = new ArrayList<>(lanes);
    for (List<Delivery> lane : split) {
      if (!lane.isEmpty()) {
        running.add(workers.submit(() -> guardedLane(lane)));
      }
    }
    for (Future<?> f : running) {
      try {
        f.get();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      } catch (ExecutionException e) {
        if (e.getCause() instanceof InboxUnavailableException down) {
          unavailable = down; // the other lanes finish first; then the loop pauses
          continue;
        }
        LOG.log(
            Level.WARNING,
            "an inbox lane failed; its unsettled deliveries are redelivered: " + e.getCause());
      }
    }
    if (unavailable != null) {
      throw unavailable;
    }
  }

  /** A poll batch split into {@code lanes} lanes by {@link #laneKey}; some may be empty. */
  List<List<Delivery>> lanes(List<Delivery> deliveries, int lanes) {
    List<List<Delivery>> split = new ArrayList<>(lanes);
    for (int i = 0; i < lanes; i++) {
      split.add(new ArrayList<>());
    }
    for (Delivery d : deliveries) {
      split.get(Math.floorMod(laneKey(d).hashCode(), lanes)).add(d);
    }
    return split;
  }

  /** Events of one key share a lane; events without a key spread by id. */
  private String laneKey(Delivery d) {
    try {
      Envelope e = d.envelope();
      return e.key() != null ? e.key() : e.id();
    } catch (RuntimeException unreadable) {
      return ""; // classified (and dead-lettered) in its lane
    }
  }

  /**
   * A lane whose processing failed unexpectedly still settles every delivery: the ones it had not
   * settled are nacked (a settled delivery ignores the second settlement), so none is left in
   * flight to freeze a Kafka partition or hold an Artemis or SQS slot until the consumer closes.
   */
  private void guardedLane(List<Delivery> lane) {
    try {
      processLane(lane);
    } catch (InboxUnavailableException down) {
      throw down; // left unsettled: the consumer loop tries them again, in order
    } catch (RuntimeException | Error unexpected) {
      LOG.log(
          Level.WARNING,
          "inbox "
              + settings.subscription()
              + ": a batch failed unexpectedly; its unsettled deliveries are redelivered",
          unexpected);
      for (Delivery d : lane) {
        try {
          d.nack(settings.retry().delayAfter(Math.max(1, d.attempt())));
        } catch (RuntimeException ignored) {
          // settled already, or the consumer is gone: the broker redelivers
        }
      }
    }
  }

  private void processLane(List<Delivery> deliveries) {
    List<Item> valid = batch(deliveries);
    if (!valid.isEmpty()) {
      processValid(valid);
    }
  }

  /**
   * Builds a lane's batch: each delivery decoded and classified (poison dead-lettered), and copies
   * the front knows acknowledged. What is left goes to the database in one transaction.
   */
  List<Item> batch(List<Delivery> deliveries) {
    List<Item> classified = new ArrayList<>(deliveries.size());
    List<Item> frontHits = new ArrayList<>();
    List<Poison> poison = new ArrayList<>();
    for (Delivery d : deliveries) {
      Item item = classifier.classify(Tracked.of(d), poison);
      // poison is stored and acked at once, before the next delivery is decoded
      poison.forEach(failures::poison);
      poison.clear();
      if (item != null) {
        (knownToFront(item) ? frontHits : classified).add(item);
      }
    }
    if (!frontHits.isEmpty() && !settleFrontHits(frontHits)) {
      classified.addAll(frontHits); // not counted: the database decides them as usual
    }
    return classified;
  }

  /**
   * A copy of an event this inbox processed and committed within the front's window, with the same
   * payload: acknowledged without asking the database about it, and counted. The commit it stands
   * on happened before the front recorded it, so this is still "commit first, acknowledge second".
   * A copy with another payload misses (its hash is part of the key) and goes to the database,
   * which dead-letters the conflict.
   */
  private boolean knownToFront(Item item) {
    return front != null && front.seen(item.frontHigh, item.frontLow);
  }

  /**
   * The front's copies join the durable duplicate count in one statement for the lane, committed
   * before they are acknowledged, as every other duplicate's count is; false if the database could
   * not count them.
   */
  private boolean settleFrontHits(List<Item> hits) {
    try {
      tx.inTransaction(
          c -> {
            repo.countDuplicates(c, settings.subscription(), hits.size());
            return null;
          });
    } catch (RuntimeException dbDown) {
      LOG.log(Level.DEBUG, "could not count the dedup front's duplicates: " + dbDown);
      return false;
    }
    for (Item item : hits) {
      item.delivery.ack();
      listener.duplicate(settings.subscription(), item.envelope);
    }
    return true;
  }

  private void processValid(List<Item> valid) {
    RuntimeException batchFailure = null;
    if (settings.batch() && valid.size() > 1) {
      try {
        Set<String> recheck = new HashSet<>();
        List<Recording.Outcome> outcomes =
            tx.inTransaction(c -> recording.handleAll(c, valid, recheck));
        fallbacks.batchSucceeded();
        recheckHeads(recheck);
        for (int i = 0; i < valid.size(); i++) {
          settled(valid.get(i), outcomes.get(i));
        }
        return;
      } catch (RuntimeException batchFailed) {
        // Roll back together, then isolate the failing delivery by processing one by one.
        LOG.log(Level.DEBUG, "inbox batch failed; processing one by one: " + batchFailed);
        batchFailure = batchFailed;
      }
    }
    boolean eachSucceeded = true;
    for (Item item : valid) {
      // A key whose event failed here was queued with it; its later events here find it queued
      // (one look-up each, in their own transaction) and queue behind it.
      if (!processOne(item)) {
        eachSucceeded = false;
      }
    }
    if (batchFailure != null && eachSucceeded) {
      fallbacks.failedWholeButEachSucceededAlone(batchFailure);
    }
  }

  /** One event in a transaction of its own; false if its handler failed. */
  private boolean processOne(Item item) {
    Recording.Outcome outcome;
    Set<String> recheck = new HashSet<>();
    try {
      outcome = tx.inTransaction(c -> recording.handleOne(c, item, recheck));
    } catch (RuntimeException failure) {
      failures.delivery(item, failure);
      return false;
    } catch (Error handlerError) {
      failures.delivery(item, HandlerCall.asAttempt(handlerError));
      return false;
    }
    recheckHeads(recheck);
    settled(item, outcome);
    return true;
  }

  /**
   * After the commit: keys queued behind a pending event whose worker may have finished meanwhile
   * without seeing them (see {@link PendingEventRepository}).
   */
  private void recheckHeads(Set<String> keys) {
    HeadRecheck.after(tx, pending, settings.subscription(), keys);
  }

  /** Commit came first; now the ack. */
  private void settled(Item item, Recording.Outcome outcome) {
    if (front != null && outcome == Recording.Outcome.PROCESSED) {
      // committed and processed now. Not a duplicate: it may be a copy of a queued event, which
      // may still become a dead letter whose redelivery must run again
      front.record(item.frontHigh, item.frontLow);
    }
    Checkpoints.reach(Checkpoint.INBOX_COMMITTED_NOT_ACKED);
    item.delivery.ack();
    switch (outcome) {
      case PROCESSED -> listener.processed(settings.subscription(), item.envelope);
      case RECEIVED -> listener.received(settings.subscription(), item.envelope);
      case DUPLICATE -> listener.duplicate(settings.subscription(), item.envelope);
      case CONFLICT -> listener.deadLettered(settings.subscription(), DeadLetterReason.CONFLICT);
      case PARKED -> listener.parked(settings.subscription(), item.envelope);
    }
  }
}
