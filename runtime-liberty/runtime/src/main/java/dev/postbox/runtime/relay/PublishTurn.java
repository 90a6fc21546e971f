package dev.postbox.runtime.relay;

import dev.postbox.runtime.api.OutboxRow;
import dev.postbox.runtime.api.RelayListener;
import dev.postbox.runtime.db.Transactions;
import dev.postbox.runtime.outbox.OutboxRepository;
import java.lang.System.Logger.Level;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * One relay turn over some partitions; the {@link Relay} decides which partitions a turn takes and
 * when. A turn is
 *
 * <ol>
 *   <li>a short transaction that locks the turn's lease rows in one statement, checks this instance
 *       still holds each with time to spare, reads the keys held up by a FAILED row or a back-off,
 *       and claims each partition's due rows in id order up to one batch for the whole turn (never
 *       {@code SKIP LOCKED}, which could skip an earlier row of a key);
 *   <li>the broker calls ({@link BatchSender}), one per destination (per wave, when a key
 *       alternates between destinations), <em>outside any transaction</em>: a slow or absent broker
 *       holds a worker thread, never a pooled connection or a lock that the application's own
 *       transactions wait for;
 *   <li>a second short transaction ({@link Settlement}) that checks the leases again, marks what
 *       was accepted dispatched in one statement, reschedules retriable failures with back-off, and
 *       parks permanent ones as FAILED; a partition whose lease was lost meanwhile marks nothing.
 * </ol>
 */
final class PublishTurn {

  private static final System.Logger LOG = System.getLogger(Relay.class.getName());

  private final Transactions tx;
  private final OutboxRepository rows;
  private final LeaseManager leases;
  private final RelaySettings settings;
  private final Clock clock;
  private final RelayListener listener;
  private final BatchSender sender;
  private final Settlement settlement;
  private final AtomicLong published = new AtomicLong();
  private final Promotion promotion;

  /** The due timer's marks: which partitions have scheduled rows due (see {@link DueTimer}). */
  interface Promotion {
    /** Whether the partition's due scheduled rows must turn PENDING now; clears the mark. */
    boolean take(int partition);

    /** The claim that took these marks rolled back: mark them again. */
    void giveBack(List<Integer> partitions);

    /** A claim promoted: look for scheduled rows still due shortly. */
    void lookAgain();
  }

  private final dev.postbox.runtime.outbox.ScheduledRepository scheduled;

  PublishTurn(
      Transactions tx,
      OutboxRepository rows,
      LeaseManager leases,
      RelaySettings settings,
      Clock clock,
      RelayListener listener,
      BatchSender sender,
      Settlement settlement,
      Promotion promotion) {
    this.promotion = promotion;
    this.scheduled = new dev.postbox.runtime.outbox.ScheduledRepository(rows.dialect());
    this.tx = tx;
    this.rows = rows;
    this.leases = leases;
    this.settings = settings;
    this.clock = clock;
    this.listener = listener;
    this.sender = sender;
    this.settlement = settlement;
  }

  /** Events published (and settled) since the relay started. */
  long published() {
    return published.get();
  }

  /** What a turn's claim transaction found. */
  private record Claim(
      List<OutboxRow> rows,
      Set<Integer> lost,
      Set<Integer> unreached,
      Set<Integer> full,
      List<OutboxRow> expired) {}

  /**
   * Whether the row's expiry ({@code expirytime}, checked when it was recorded) has come, by the
   * database's clock.
   */
  static boolean expiredAt(OutboxRow row, Instant now) {
    String expiry = row.headers().get(dev.postbox.spi.Envelope.EXPIRYTIME);
    if (expiry == null) {
      return false;
    }
    try {
      return !dev.postbox.spi.Envelope.expiryTime(row.headers()).orElseThrow().isAfter(now);
    } catch (dev.postbox.spi.InvalidEventException unreadable) {
      // Not an RFC 3339 time (a row written before the rule, or by SQL): not expired here; the
      // row cannot become an envelope, and the publish parks it FAILED with the reason.
      return false;
    }
  }

  /**
   * One turn over some partitions: claim in one short transaction that locks their lease rows (a
   * takeover skips them until it commits), publish outside any transaction, settle in a second
   * short transaction, fenced per partition by its lease. Returns how many rows it claimed; adds to
   * {@code first} the partitions the turn did not reach (they go first next time) and to {@code
   * more} those that may have rows left; tells {@code lostLeases} at once of partitions whose lease
   * it found lost, and runs {@code wakeHeld} when a broker outage ended.
   *
   * <p>(#20 tried a claim that locked nothing; the SQS FIFO crash harness then left orders waiting
   * after a restart. The claim locks the lease rows.)
   */
  int run(
      List<Integer> partitions,
      Set<Integer> first,
      Set<Integer> more,
      Consumer<Set<Integer>> lostLeases,
      Runnable wakeHeld) {
    List<Integer> promote = new ArrayList<>();
    int[] promoted = {0};
    Claim claim;
    try {
      claim = claim(partitions, promote, promoted);
    } catch (RuntimeException e) {
      promotion.giveBack(promote); // rolled back: the due rows are still scheduled
      throw e;
    }
    if (promoted[0] >= dev.postbox.runtime.outbox.ScheduledRepository.PROMOTE_LIMIT) {
      // Many fell due at once: the marks stand, and the partitions go again at once.
      promotion.giveBack(promote);
      more.addAll(promote);
    } else if (!promote.isEmpty()) {
      // Rows skipped (locked by a cancel in flight, or a clock that stepped back): the due timer
      // looks again shortly, and marks what is still due.
      promotion.lookAgain();
    }
    return publish(claim, first, more, lostLeases, wakeHeld);
  }

  private Claim claim(List<Integer> partitions, List<Integer> promote, int[] promoted) {
    return tx.inTransaction(
        c -> {
          Instant now = clock.instant();
          Map<Integer, Boolean> held = leases.holdsWithTimeToSpare(c, partitions);
          Set<Integer> lost = new HashSet<>();
          List<Integer> due = new ArrayList<>();
          for (int p : partitions) {
            Boolean spare = held.get(p);
            if (spare == null) {
              lost.add(p);
            } else if (spare) {
              due.add(p); // with less than a quarter of the lease left: renew it first
            }
          }
          List<OutboxRow> out = new ArrayList<>();
          List<OutboxRow> expired = new ArrayList<>();
          Set<Integer> unreached = new java.util.LinkedHashSet<>();
          Set<Integer> full = new java.util.LinkedHashSet<>();
          if (due.isEmpty()) {
            return new Claim(out, lost, unreached, full, expired);
          }
          // Scheduled rows that fell due (the due timer marked their partitions) turn PENDING
          // here, under the leases: a cancel that committed first has taken them out already,
          // and one that commits later finds them PENDING and returns false.
          promote.clear();
          for (int p : due) {
            if (promotion.take(p)) {
              promote.add(p);
            }
          }
          promoted[0] = scheduled.promoteDue(c, promote, now);
          OutboxRepository.Waiting waitingKeys = rows.waiting(c, due, now);
          // In the turn's order, each partition up to what is left of the batch: under load
          // the first fills it (one claim statement, as a whole batch of one partition was),
          // and the partitions not reached go first in the next turn, so none starves.
          for (int p : due) {
            int budget = settings.batchSize() - out.size();
            if (budget <= 0) {
              unreached.add(p);
              continue;
            }
            List<OutboxRow> got = rows.claim(c, p, now, budget, waitingKeys);
            if (got.size() == budget) {
              full.add(p); // goes again at once, with what this claim did not read
              // due-then-id across the claim's end
              got = rows.withoutOvertaken(c, p, got, budget < settings.batchSize());
            }
            for (OutboxRow row : got) {
              if (expiredAt(row, now)) {
                expired.add(row);
              } else {
                out.add(row);
              }
            }
          }
          // Past their expiry: never published, EXPIRED in this transaction.
          scheduled.expire(c, expired.stream().map(OutboxRow::id).toList(), now);
          return new Claim(out, lost, unreached, full, expired);
        });
  }

  private int publish(
      Claim claim,
      Set<Integer> first,
      Set<Integer> more,
      Consumer<Set<Integer>> lostLeases,
      Runnable wakeHeld) {
    if (!claim.expired().isEmpty()) {
      listener.expired(claim.expired());
    }
    if (!claim.lost().isEmpty()) {
      lostLeases.accept(claim.lost());
    }
    // At once: these claimed nothing, so taking them again soon cannot send copies, and a throw
    // below must not leave them waiting for the poll.
    first.addAll(claim.unreached());
    List<OutboxRow> batch = claim.rows();
    if (batch.isEmpty()) {
      return 0;
    }
    listener.publishing(batch);
    BatchSender.Outcome outcome = sender.publish(batch);
    Set<Integer> claimedFrom = new java.util.TreeSet<>();
    batch.forEach(r -> claimedFrom.add(r.partition()));
    List<OutboxRow> done = new ArrayList<>();
    Set<Integer> fencedNow =
        tx.inTransaction(
            c -> {
              done.clear();
              // Fencing: only a lease's holder marks its partition's rows. One that lost the lease
              // while it published (paused longer than the lease) marks none of them; the new
              // owner publishes the rows again, and the inbox skips those copies.
              Map<Integer, Boolean> held = leases.holdsWithTimeToSpare(c, claimedFrom);
              Set<Integer> lost = new HashSet<>(claimedFrom);
              lost.removeAll(held.keySet());
              List<OutboxRow> mine = batch;
              if (!lost.isEmpty()) {
                mine = new ArrayList<>();
                for (OutboxRow row : batch) {
                  if (!lost.contains(row.partition())) {
                    mine.add(row);
                  }
                }
              }
              settlement.settle(c, mine, outcome, done);
              return lost;
            });
    // Only once settled: a turn that throws on the way is not taken again at once with the same
    // rows (a hot loop of copies); its partitions wait for the next wake-up or poll.
    more.addAll(claim.full());
    if (!fencedNow.isEmpty()) {
      lostLeases.accept(fencedNow);
      for (int partition : fencedNow) {
        List<OutboxRow> unmarked = batch.stream().filter(r -> r.partition() == partition).toList();
        more.remove(partition);
        LOG.log(
            Level.WARNING,
            "outbox partition "
                + partition
                + ": this instance ("
                + settings.instanceId()
                + ") lost the partition's lease while it published a batch of "
                + unmarked.size()
                + " rows (paused for longer than postbox.lease?); it marked none of them, and the"
                + " partition's new owner publishes them again (duplicates the inbox skips)");
        listener.fenced(partition, unmarked);
      }
    }
    if (!done.isEmpty()) {
      published.addAndGet(done.size());
      listener.published(done, clock.instant());
    }
    if (!outcome.recovered().isEmpty()) {
      resume(outcome.recovered());
      wakeHeld.run(); // rows held during the outage are due now
    }
    return batch.size();
  }

  /**
   * After an outage: the destinations' waiting rows become due now, in a transaction of their own
   * (a failure here must not undo the batch's settlement); if it fails they come due by their
   * schedule, at most one probe interval later.
   */
  private void resume(Set<String> destinations) {
    for (String destination : destinations) {
      try {
        tx.inTransaction(c -> rows.resume(c, destination, clock.instant()));
      } catch (RuntimeException e) {
        LOG.log(
            Level.WARNING,
            "making the rows of '"
                + destination
                + "' due after its outage failed; they come due by their schedule: "
                + e);
      }
    }
  }
}
