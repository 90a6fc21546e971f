package dev.postbox.runtime.inbox;

import dev.postbox.runtime.checkpoint.Checkpoint;
import dev.postbox.runtime.checkpoint.Checkpoints;
import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Transactions;
import dev.postbox.runtime.dedup.DedupFront;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.MalformedMessageException;
import java.lang.System.Logger.Level;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
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
 *   <li>Handler failure → rollback; the attempt is recorded in its own transaction; nack with
 *       back-off, or after the last attempt a dead letter with the error → ack.
 * </ul>
 *
 * <p>A poll batch is split into lanes by key (with {@link InboxSettings#workers()} above 1); lanes
 * run in parallel and each keeps its order. In batch mode a lane is one transaction whose inbox
 * rows are written in one round trip; if anything in it fails, it is rolled back and processed one
 * by one, so one failing event never holds back the others, and a key whose event failed stops
 * there until that event is retried. Nothing is dropped silently: every delivery ends processed,
 * duplicate, or dead-lettered.
 */
public final class InboxProcessor {

  private static final System.Logger LOG = System.getLogger(InboxProcessor.class.getName());

  private final Transactions tx;
  private final InboxRepository repo;
  private final PendingEvents pending;
  private final InboxSettings settings;
  private final InboxHandler handler;
  private final Clock clock;
  private final InboxListener listener;
  private final ExecutorService workers;
  private final BatchFallbacks fallbacks;
  private final DedupFront front;

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
    this.pending = new PendingEvents(dialect);
    this.settings = settings;
    this.handler = handler;
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
        LOG.log(
            Level.WARNING,
            "an inbox lane failed; its unsettled deliveries are redelivered: " + e.getCause());
      }
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
    if (valid.isEmpty()) {
      return;
    }
    try {
      processValid(valid);
    } finally {
      updateHolds(valid);
    }
  }

  /**
   * Builds a lane's batch: each delivery decoded and classified (poison dead-lettered), copies the
   * front knows acknowledged, and the events of a held key sent back. What is left goes to the
   * database in one transaction.
   */
  List<Item> batch(List<Delivery> deliveries) {
    List<Item> classified = new ArrayList<>(deliveries.size());
    List<Item> frontHits = new ArrayList<>();
    for (Delivery d : deliveries) {
      Item item = classify(new NackSeen(d));
      if (item != null) {
        (knownToFront(item) ? frontHits : classified).add(item);
      }
    }
    if (!frontHits.isEmpty() && !settleFrontHits(frontHits)) {
      classified.addAll(frontHits); // not counted: the database decides them as usual
    }
    return holdBack(classified);
  }

  /**
   * A copy of an event this inbox processed and committed within the front's window, with the same
   * payload: acknowledged without asking the database about it, and counted. The commit it stands
   * on happened before the front recorded it, so this is still "commit first, acknowledge second".
   * A copy with another payload misses (its hash is part of the key) and goes to the database,
   * which dead-letters the conflict.
   */
  private boolean knownToFront(Item item) {
    if (front == null) {
      return false;
    }
    // The head of a hold goes the usual way, which ends its hold when it is acknowledged.
    String key = item.envelope.key();
    Hold h = key == null ? null : holds.get(key);
    if (h != null && h.eventId.equals(item.envelope.id())) {
      return false;
    }
    return front.seen(item.frontHigh, item.frontLow);
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

  /**
   * A key whose event failed is held until that event is back and done: the key's other events that
   * arrive meanwhile, in this poll or a later one, are nacked to come back a little after it (10 ms
   * more per place), so none overtakes it on brokers that redeliver by delay. A hold ends when its
   * event is acknowledged (processed or dead-lettered), or a few seconds after it was due back
   * without coming (it went to another consumer).
   */
  private List<Item> holdBack(List<Item> items) {
    if (holds.isEmpty()) {
      return items;
    }
    long now = System.nanoTime();
    Set<String> headsHere = new HashSet<>();
    for (Item item : items) {
      String key = item.envelope.key();
      Hold h = key == null ? null : holds.get(key);
      if (h != null && h.eventId.equals(item.envelope.id())) {
        headsHere.add(key);
      }
    }
    List<Item> free = new ArrayList<>(items.size());
    for (Item item : items) {
      String key = item.envelope.key();
      Hold h = key == null ? null : holds.get(key);
      if (h != null && now - h.dueNanos > HOLD_GRACE.toNanos()) {
        holds.remove(key, h); // its event did not come back here: another consumer has it
        h = null;
      }
      if (h == null || headsHere.contains(key)) {
        free.add(item);
        continue;
      }
      // after the head and after every follower already sent back: the key keeps its order
      long due =
          h.lastDueNanos.accumulateAndGet(now, (last, t) -> Math.max(last, t) + SPACING_NANOS);
      item.delivery.nack(atMostMaxDelay(Duration.ofNanos(due - now)));
    }
    return free;
  }

  /**
   * After a lane: a key whose event was nacked is held behind the first such event; a hold whose
   * event was acknowledged (processed or dead-lettered) ends.
   */
  private void updateHolds(List<Item> items) {
    long now = System.nanoTime();
    if (holds.size() > 10_000) {
      // keys not seen again since their hold ended: forget them
      holds.values().removeIf(h -> now - h.dueNanos > HOLD_GRACE.toNanos());
    }
    Map<String, Item> firstNacked = new HashMap<>();
    Set<String> ackedIds = new HashSet<>();
    Set<String> keys = new HashSet<>();
    for (Item item : items) {
      String key = item.envelope.key();
      if (key == null) {
        continue;
      }
      keys.add(key);
      NackSeen d = (NackSeen) item.delivery;
      if (d.delay != null) {
        firstNacked.putIfAbsent(key, item);
      } else if (d.acked) {
        ackedIds.add(item.envelope.id());
      }
    }
    for (String key : keys) {
      Item failed = firstNacked.get(key);
      if (failed != null) {
        Duration delay = ((NackSeen) failed.delivery).delay;
        long lastDue = now + delay.toNanos();
        for (Item item : items) {
          Duration d = ((NackSeen) item.delivery).delay;
          if (key.equals(item.envelope.key()) && d != null) {
            lastDue = Math.max(lastDue, now + d.toNanos()); // the lane's own followers
          }
        }
        holds.put(
            key,
            new Hold(
                failed.envelope.id(),
                now + delay.toNanos(),
                new java.util.concurrent.atomic.AtomicLong(lastDue)));
      } else {
        Hold h = holds.get(key);
        if (h != null && ackedIds.contains(h.eventId)) {
          holds.remove(key, h);
        }
      }
    }
  }

  private Duration atMostMaxDelay(Duration d) {
    Duration max = settings.retry().maxDelay();
    return d.compareTo(max) > 0 ? max : d;
  }

  private void processValid(List<Item> valid) {
    RuntimeException batchFailure = null;
    if (settings.batch() && valid.size() > 1) {
      try {
        Set<String> recheck = new HashSet<>();
        List<Outcome> outcomes = tx.inTransaction(c -> handleAll(c, valid, recheck));
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
    Map<String, Duration> stoppedKeys = new HashMap<>(); // key -> when its failed event returns
    for (Item item : valid) {
      String key = item.envelope.key();
      Duration earlier = key == null ? null : stoppedKeys.get(key);
      if (earlier != null) {
        // An earlier event of this key failed: this one must not overtake it. On brokers that
        // redeliver by delay (Artemis, SQS) it comes back a little after the failed one, in its
        // place; on Kafka a nack seeks back, and order follows the offsets anyway.
        Duration after = atMostMaxDelay(earlier.plusNanos(SPACING_NANOS));
        item.delivery.nack(after);
        stoppedKeys.put(key, after);
        continue;
      }
      NackSeen seen = (NackSeen) item.delivery;
      if (!processOne(item)) {
        eachSucceeded = false;
        if (key != null && seen.delay != null) {
          stoppedKeys.put(key, seen.delay); // nacked: it comes back, and its key waits for it
        }
      }
    }
    if (batchFailure != null && eachSucceeded) {
      fallbacks.failedWholeButEachSucceededAlone(batchFailure);
    }
  }

  /** One event in a transaction of its own; false if its handler failed. */
  private boolean processOne(Item item) {
    Outcome outcome;
    Set<String> recheck = new HashSet<>();
    try {
      outcome = tx.inTransaction(c -> handleOne(c, item, recheck));
    } catch (RuntimeException failure) {
      failed(item, failure);
      return false;
    } catch (VirtualMachineError fatal) {
      throw fatal;
    } catch (Error handlerError) {
      // e.g. a StackOverflowError or NoClassDefFoundError in a handler: an attempt like any other,
      // so it ends as a dead letter instead of a delivery nacked for ever
      failed(item, new HandlerException(handlerError));
      return false;
    }
    recheckHeads(recheck);
    settled(item, outcome);
    return true;
  }

  /** The batch path: one round trip records every event, then the handlers run for the new ones. */
  private List<Outcome> handleAll(Connection c, List<Item> items, Set<String> recheck)
      throws SQLException {
    List<Envelope> events = new ArrayList<>(items.size());
    List<String> fingerprints = new ArrayList<>(items.size());
    for (Item item : items) {
      events.add(item.envelope);
      fingerprints.add(fingerprint(item.envelope.payload()));
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

  private Outcome handleOne(Connection c, Item item, Set<String> recheck) throws SQLException {
    if (settings.deferred()) {
      return handleAll(c, List.of(item), recheck).get(0);
    }
    String fingerprint = fingerprint(item.envelope.payload());
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
    try {
      handler.handle(c, e);
      Checkpoints.reach(Checkpoint.INBOX_BEFORE_COMMIT);
    } catch (SQLException | RuntimeException rethrow) {
      throw rethrow;
    } catch (Exception checked) {
      throw new HandlerException(checked);
    }
    return Outcome.PROCESSED;
  }

  private Outcome duplicateOrConflict(Connection c, Item item, String fingerprint)
      throws SQLException {
    Envelope e = item.envelope;
    String recorded = repo.fingerprint(c, settings.subscription(), e.id()).orElse(fingerprint);
    if (recorded.equals(fingerprint)) {
      return Outcome.DUPLICATE;
    }
    repo.deadLetter(
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

  /**
   * Deferred mode, after the commit: keys queued behind a pending event whose worker may have
   * finished meanwhile without seeing them (see {@link PendingEvents}).
   */
  private void recheckHeads(Set<String> keys) {
    pending.recheck(tx, settings.subscription(), keys);
  }

  /** Commit came first; now the ack. */
  private void settled(Item item, Outcome outcome) {
    if (front != null && outcome != Outcome.CONFLICT) {
      // committed: processed now, or found processed before
      front.record(item.frontHigh, item.frontLow);
    }
    Checkpoints.reach(Checkpoint.INBOX_COMMITTED_NOT_ACKED);
    item.delivery.ack();
    switch (outcome) {
      case PROCESSED -> listener.processed(settings.subscription(), item.envelope);
      case RECEIVED -> listener.received(settings.subscription(), item.envelope);
      case DUPLICATE -> listener.duplicate(settings.subscription(), item.envelope);
      case CONFLICT -> listener.deadLettered(settings.subscription(), DeadLetterReason.CONFLICT);
    }
  }

  private void failed(Item item, RuntimeException failure) {
    Throwable cause = failure instanceof HandlerException h ? h.getCause() : failure;
    String error = describe(cause);
    String id = item.envelope.id();
    if (cause instanceof UnprocessableEventException u) {
      // No retry can fix it: dead-letter now, with the handler's reason.
      poison(item.delivery, item.envelope, u.reason(), error, Map.of(), null);
      return;
    }
    int attempts;
    try {
      attempts =
          tx.inTransaction(
              c -> {
                int n =
                    Math.max(
                        item.delivery.attempt(),
                        repo.failedAttempts(c, settings.subscription(), id) + 1);
                repo.recordFailure(c, settings.subscription(), id, n, error, clock.instant());
                return n;
              });
    } catch (RuntimeException dbDown) {
      // Cannot even record the attempt (database unavailable): let the broker redeliver later.
      item.delivery.nack(settings.retry().delayAfter(Math.max(1, item.delivery.attempt())));
      return;
    }
    if (attempts < settings.retry().maxAttempts()) {
      item.delivery.nack(settings.retry().delayAfter(attempts));
      listener.retried(settings.subscription(), item.envelope, attempts);
      return;
    }
    if (!storeDeadLetter(
        item.delivery,
        item.envelope,
        DeadLetterReason.HANDLER_FAILED,
        error,
        attempts,
        Map.of(),
        null)) {
      item.delivery.nack(settings.retry().delayAfter(attempts));
      return;
    }
    try {
      tx.inTransaction(
          c -> {
            repo.clearAttempts(c, settings.subscription(), id);
            return null;
          });
    } catch (RuntimeException dbDown) {
      // the attempt rows are only counts; the letter is stored, so the delivery is done
    }
    item.delivery.ack();
    listener.deadLettered(settings.subscription(), DeadLetterReason.HANDLER_FAILED);
  }

  /** A valid event to process, or null when the delivery was dead-lettered as poison. */
  private Item classify(Delivery d) {
    Envelope e;
    try {
      e = d.envelope();
    } catch (MalformedMessageException m) {
      boolean noId = m.kind() == MalformedMessageException.Kind.MISSING_ID;
      poison(
          d,
          null,
          noId ? DeadLetterReason.MISSING_ID : DeadLetterReason.MALFORMED,
          m.reason(),
          m.rawHeaders(),
          m.rawPayload());
      return null;
    } catch (RuntimeException unreadable) {
      if (unreadable instanceof dev.postbox.spi.BrokerException b
          && b.isRetriable()
          && d.attempt() < settings.retry().maxAttempts()) {
        // The broker could not hand the message over this time (e.g. a large message's stream
        // timed out): the message may be fine. Try again later; past the attempts, a letter.
        d.nack(settings.retry().delayAfter(Math.max(1, d.attempt())));
        return null;
      }
      // An adapter that cannot even say what is wrong: still a stored letter, never unsettled.
      poison(
          d,
          null,
          DeadLetterReason.MALFORMED,
          "the message could not be read: " + describe(unreadable),
          Map.of(),
          null);
      return null;
    }
    String nul = nulIn(e);
    if (nul != null) {
      // PostgreSQL stores no NUL in text, so this id could not even be recorded.
      poison(d, e, DeadLetterReason.MALFORMED, nul + " contains a NUL character", Map.of(), null);
      return null;
    }
    if (e.payloadSize() > settings.maxPayloadBytes()) {
      poison(
          d,
          e,
          DeadLetterReason.OVERSIZED,
          "payload of "
              + e.payloadSize()
              + " bytes is over the limit of "
              + settings.maxPayloadBytes(),
          Map.of(),
          null);
      return null;
    }
    if (!settings.types().isEmpty() && !settings.types().contains(e.type())) {
      poison(
          d,
          e,
          DeadLetterReason.UNKNOWN_TYPE,
          "no handler for type '" + e.type() + "'",
          Map.of(),
          null);
      return null;
    }
    return new Item(d, e, front != null);
  }

  private void poison(
      Delivery d,
      Envelope e,
      DeadLetterReason reason,
      String why,
      Map<String, String> headers,
      byte[] payload) {
    if (!storeDeadLetter(d, e, reason, why, d.attempt(), headers, payload)) {
      d.nack(
          settings.retry().delayAfter(Math.max(1, d.attempt()))); // not stored: must not be acked
      return;
    }
    d.ack();
    listener.deadLettered(settings.subscription(), reason);
  }

  /**
   * Stores a dead letter in a transaction of its own: the whole (sanitised) letter, or, if even
   * that fails, the minimal one (subscription, reason, why, the broker's metadata, the payload's
   * size and hash). False only when neither could be stored: the database is down, and the delivery
   * must be nacked, not acked.
   */
  private boolean storeDeadLetter(
      Delivery d,
      Envelope e,
      DeadLetterReason reason,
      String why,
      int attempts,
      Map<String, String> headers,
      byte[] payload) {
    try {
      tx.inTransaction(
          c ->
              repo.deadLetter(
                  c,
                  settings.subscription(),
                  e,
                  reason,
                  why,
                  attempts,
                  headers,
                  payload == null ? new byte[0] : payload,
                  d.metadata(),
                  clock.instant()));
      return true;
    } catch (RuntimeException whole) {
      if (!isDataError(whole)) {
        // the database is down or busy, not refusing this letter's data: nack, it comes back
        return unstored(reason, whole);
      }
      try {
        Map<String, String> identity = new java.util.LinkedHashMap<>(d.metadata());
        byte[] bytes = e != null ? e.payload() : payload == null ? new byte[0] : payload;
        identity.put("postbox.payload.bytes", Integer.toString(bytes.length));
        identity.put("postbox.payload.sha256", DeadLetterFields.sha256(bytes));
        identity.put("postbox.truncated", "true");
        tx.inTransaction(
            c ->
                repo.deadLetterMinimal(
                    c,
                    settings.subscription(),
                    reason,
                    why + " (the whole letter could not be stored: " + describe(whole) + ")",
                    attempts,
                    identity,
                    clock.instant()));
        LOG.log(
            Level.WARNING,
            "inbox "
                + settings.subscription()
                + ": stored a minimal "
                + reason
                + " dead letter; the whole one failed: "
                + describe(whole));
        return true;
      } catch (RuntimeException minimal) {
        return unstored(reason, minimal);
      }
    }
  }

  /** Logs that a letter could not be stored; false, so the caller nacks the delivery. */
  private boolean unstored(DeadLetterReason reason, RuntimeException why) {
    LOG.log(
        Level.WARNING,
        "inbox "
            + settings.subscription()
            + ": a "
            + reason
            + " dead letter could not be stored (database unavailable?); the delivery is"
            + " nacked and will come back: "
            + describe(why));
    return false;
  }

  /**
   * Whether the database refused the data itself (SQLState classes 22 and 23, MariaDB's incorrect
   * value errors), as opposed to being unavailable: only then does a minimal letter help.
   */
  static boolean isDataError(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SQLException s) {
        String state = s.getSQLState();
        if (state != null && (state.startsWith("22") || state.startsWith("23"))) {
          return true;
        }
        int code = s.getErrorCode();
        if (code == 1366 || code == 1406 || code == 1292 || code == 1264) {
          return true;
        }
      }
    }
    return false;
  }

  /** The first event attribute holding a NUL character, or null. */
  private static String nulIn(Envelope e) {
    String[][] fields = {
      {"id", e.id()},
      {"key", e.key()},
      {"type", e.type()},
      {"source", e.source()},
      {"subject", e.subject()}
    };
    for (String[] f : fields) {
      if (f[1] != null && f[1].indexOf('\0') >= 0) {
        return "the event " + f[0];
      }
    }
    return null;
  }

  static String describe(Throwable failure) {
    return failure.getClass().getName() + ": " + failure.getMessage();
  }

  static String fingerprint(byte[] payload) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(payload));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private enum Outcome {
    PROCESSED,
    RECEIVED,
    DUPLICATE,
    CONFLICT
  }

  /**
   * A delivery with its decoded envelope and, when the front is on, its front key: the id's two
   * halves, the low one mixed with the payload's hash. Computed once here (the payload is copied
   * and hashed), read when the front is asked and again when the outcome is recorded.
   */
  static final class Item {
    final Delivery delivery;
    final Envelope envelope;
    final long frontHigh;
    final long frontLow;

    Item(Delivery delivery, Envelope envelope, boolean keyed) {
      this.delivery = delivery;
      this.envelope = envelope;
      this.frontHigh = keyed ? DedupFront.high(envelope.id()) : 0;
      this.frontLow =
          keyed ? DedupFront.low(envelope.id()) ^ DedupFront.hash(envelope.payload()) : 0;
    }
  }

  /** Keys held behind a failed event, across polls (lanes run in parallel: concurrent). */
  private final Map<String, Hold> holds = new java.util.concurrent.ConcurrentHashMap<>();

  /** A key held behind its failed event, until that event is due back. */
  private record Hold(
      String eventId, long dueNanos, java.util.concurrent.atomic.AtomicLong lastDueNanos) {}

  /** How far apart a held key's events are sent back, so each returns after the one before. */
  private static final long SPACING_NANOS = Duration.ofMillis(50).toNanos();

  /** How long after its event was due a hold lasts without seeing it. */
  private static final Duration HOLD_GRACE = Duration.ofSeconds(5);

  /** A delivery that remembers how it was settled. */
  private static final class NackSeen implements Delivery {
    private final Delivery d;
    volatile Duration delay;
    volatile boolean acked;

    NackSeen(Delivery d) {
      this.d = d;
    }

    @Override
    public Envelope envelope() {
      return d.envelope();
    }

    @Override
    public int attempt() {
      return d.attempt();
    }

    @Override
    public Map<String, String> metadata() {
      return d.metadata();
    }

    @Override
    public void ack() {
      acked = true;
      d.ack();
    }

    @Override
    public void nack(Duration delay) {
      this.delay = delay;
      d.nack(delay);
    }
  }

  /** Carries a checked handler exception through the transaction runner. */
  static final class HandlerException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    HandlerException(Throwable cause) {
      super(cause.getMessage(), cause);
    }
  }
}
