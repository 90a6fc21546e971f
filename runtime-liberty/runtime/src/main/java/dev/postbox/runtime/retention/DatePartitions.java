package dev.postbox.runtime.retention;

import dev.postbox.runtime.db.DataAccessException;
import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Transactions;
import java.lang.System.Logger;
import java.lang.System.Logger.Level;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;

/**
 * Date-partitioned retention of the outbox and the inbox (PostgreSQL, opt-in with {@code
 * postbox.date-partitions=true}; the tables are converted by {@code
 * db/postbox/postgresql-date-partitions}). Each table is partitioned by RANGE of a {@code bucket}
 * number; new rows go to the current bucket ({@code postbox_bucket}, read by the column's default).
 * {@link #maintain} creates the next buckets' partitions ahead of time, moves to the next bucket
 * once the current one is older than the interval, and drops a bucket's partition once every row in
 * it is settled and older than the retention: a DROP frees its pages at once, where batched DELETEs
 * leave dead rows, bloated indexes and vacuum work behind.
 *
 * <p><b>Dedup across buckets.</b> The inbox's unique key includes the bucket (PostgreSQL requires
 * the partition key in every unique index of a partitioned table), so it only catches a copy
 * recorded in the same bucket. {@link #inEarlierBuckets} catches the rest: the recording
 * transaction takes a shared advisory lock first, then looks the ids up in the earlier buckets,
 * then inserts into the current one. The bucket moves on only under the same lock held exclusively,
 * so every transaction that wrote to the old bucket has committed before one writes to the new
 * bucket, and that one's look sees their rows. {@code DatePartitionsIT} shows both halves fail
 * without their part.
 *
 * <p>Its statements are {@link BucketRepository}'s.
 */
public final class DatePartitions {

  private static final Logger LOG = System.getLogger(DatePartitions.class.getName());

  /**
   * SQL states after which a step is left to the next run: a lock wait past the timeout (55P03),
   * and another instance's maintenance having created (42P07, or 23505 on the catalog) or dropped
   * (42P01) the same partition a moment before.
   */
  private static final Set<String> RETRY_LATER = Set.of("55P03", "42P07", "23505", "42P01");

  /** Buckets whose partitions exist ahead of the current one. */
  static final int AHEAD = 2;

  /** The two tables, with what "settled" and "when" mean for each. */
  public enum Table {
    /**
     * Settled: dispatched or discarded; when: the last settling or the newest row's creation (ids
     * grow with time), whichever is later, both read from an index's end.
     */
    OUTBOX(
        "postbox_outbox",
        "SELECT GREATEST((SELECT MAX(dispatched_at) FROM %1$s"
            + " WHERE status IN ('DISPATCHED', 'DISCARDED')),"
            + " (SELECT MAX(dispatched_at) FROM %1$s WHERE status IN ('CANCELLED', 'EXPIRED')),"
            + " (SELECT created_at FROM %1$s ORDER BY id DESC FETCH FIRST 1 ROWS ONLY))",
        // probes, each answered by its partial index (an IN would read the whole partition);
        // scheduled rows, however far ahead their due time, keep their bucket
        "SELECT EXISTS (SELECT 1 FROM %1$s WHERE status = 'PENDING')"
            + " OR EXISTS (SELECT 1 FROM %1$s WHERE status = 'FAILED')"
            + " OR EXISTS (SELECT 1 FROM %1$s WHERE status IN ('SCHEDULED', 'SCHEDULED_KEY'))"),
    /** Settled: processed (RECEIVED rows wait for a deferred worker); when: received. */
    INBOX(
        "postbox_inbox",
        "SELECT MAX(received_at) FROM %s",
        // the conversion's partial index postbox_inbox_received_only answers it
        "SELECT EXISTS (SELECT 1 FROM %s WHERE status = 'RECEIVED')");

    private final String name;
    private final String latestSql;
    private final String unsettledSql;

    Table(String name, String latestSql, String unsettledSql) {
      this.name = name;
      this.latestSql = latestSql;
      this.unsettledSql = unsettledSql;
    }

    String partition(int bucket) {
      return name + "_b" + bucket;
    }

    String tableName() {
      return name;
    }

    String latestSql() {
      return latestSql;
    }

    String unsettledSql() {
      return unsettledSql;
    }
  }

  /**
   * What one {@link #maintain} run did.
   *
   * @param current the bucket new rows go to, after the run
   * @param created buckets whose partitions this run created
   * @param switched whether this run moved to the next bucket
   * @param dropped buckets whose partitions this run dropped
   * @param heldBack past-retention buckets kept because rows in them are not settled
   */
  public record Run(
      int current,
      List<Integer> created,
      boolean switched,
      List<Integer> dropped,
      List<Integer> heldBack) {}

  private final Transactions tx;
  private final Clock clock;
  private final Table table;

  public DatePartitions(Transactions tx, Clock clock, Table table) {
    this.tx = tx;
    this.clock = clock;
    this.table = table;
  }

  /**
   * Retention's hand-over: if the table is date-partitioned, runs {@link #maintain} and returns
   * true; otherwise returns false and the caller deletes. Looked up at every run, never remembered:
   * a DELETE written for the plain table must not run on a partitioned one.
   */
  public static boolean maintainIfPartitioned(
      Transactions tx, Dialect dialect, Clock clock, Table table, Duration keep) {
    if (!tx.inTransaction(c -> isPartitioned(c, dialect, table))) {
      return false;
    }
    Run run = new DatePartitions(tx, clock, table).maintain(keep);
    if (run.switched() || !run.dropped().isEmpty()) {
      LOG.log(
          Level.INFO,
          table.name
              + " date partitions: now bucket "
              + run.current()
              + (run.dropped().isEmpty() ? "" : "; dropped buckets " + run.dropped()));
    }
    return true;
  }

  /** Whether the table is date-partitioned (converted); false on any database but PostgreSQL. */
  public static boolean isPartitioned(Connection c, Dialect dialect, Table table)
      throws SQLException {
    return BucketRepository.isPartitioned(c, dialect, table);
  }

  /**
   * Sets the bucket interval of both tables (from {@code postbox.date-partitions.interval}); it
   * takes effect at the next move to a new bucket.
   */
  public static void setInterval(Transactions tx, Duration interval) {
    tx.inTransaction(c -> BucketRepository.setInterval(c, Math.max(1, interval.toSeconds())));
  }

  /**
   * For the inbox's recording transaction, as its first statements: takes the shared side of the
   * bucket lock (held to the end of the transaction) and returns which of {@code ids} an earlier
   * bucket already holds for the subscription. Those are duplicates; the rest are inserted into the
   * current bucket, whose unique key catches copies within it.
   */
  public static Set<String> inEarlierBuckets(
      Connection c, String subscription, Collection<String> ids) throws SQLException {
    return BucketRepository.inEarlierBuckets(c, subscription, ids);
  }

  /**
   * One maintenance run: partitions ahead, the move to the next bucket when the current one is
   * older than the interval, and the drops of buckets past {@code keep}. Each step is a transaction
   * of its own with a short lock timeout: a step that cannot have its lock at once is left to the
   * next run rather than queue in front of the application's writes.
   */
  public Run maintain(Duration keep) {
    BucketRepository.State state = state();
    List<Integer> created = new ArrayList<>(ensureAhead(state.current()));
    boolean switched = false;
    Instant now = clock.instant();
    if (!now.isBefore(state.openedAt().plusSeconds(state.intervalSecs()))) {
      switched = advance(state.current(), now);
      if (switched) {
        state = state();
        created.addAll(ensureAhead(state.current()));
      } else if (now.isAfter(state.openedAt().plusSeconds(2 * state.intervalSecs()))) {
        LOG.log(
            Level.WARNING,
            table.name
                + ": bucket "
                + state.current()
                + " has been open since "
                + state.openedAt()
                + ", over twice the interval, and could not move on: for the inbox, recording"
                + " transactions held the bucket lock past 0.5 s at every try (long handlers);"
                + " nothing is dropped until it moves");
      }
    }
    List<Integer> dropped = new ArrayList<>();
    List<Integer> heldBack = new ArrayList<>();
    Instant cutoff = now.minus(keep);
    for (int bucket : buckets()) {
      if (bucket >= state.current()) {
        continue;
      }
      switch (dropIfExpiredOrLater(bucket, cutoff)) {
        case DROPPED -> dropped.add(bucket);
        case HELD_BACK -> heldBack.add(bucket);
        case KEPT -> {}
      }
    }
    if (!heldBack.isEmpty()) {
      LOG.log(
          Level.WARNING,
          table.name
              + ": buckets "
              + heldBack
              + " are past the retention but hold rows not settled yet (outbox: PENDING, FAILED or SCHEDULED;"
              + " inbox: RECEIVED); they are dropped once those rows settle");
    }
    return new Run(state.current(), created, switched, dropped, heldBack);
  }

  private BucketRepository.State state() {
    return tx.inTransaction(c -> BucketRepository.state(c, table));
  }

  /** The buckets whose partitions exist, in order. */
  List<Integer> buckets() {
    return tx.inTransaction(c -> BucketRepository.buckets(c, table));
  }

  private List<Integer> ensureAhead(int current) {
    List<Integer> existing = buckets();
    List<Integer> created = new ArrayList<>();
    for (int b = current; b <= current + AHEAD; b++) {
      if (existing.contains(b)) {
        continue;
      }
      int bucket = b;
      boolean done =
          ddl(
              "1s",
              c -> {
                BucketRepository.createPartition(c, table, bucket);
                return true;
              });
      if (done) {
        created.add(bucket);
      }
    }
    return created;
  }

  /**
   * Moves to the next bucket, under the bucket lock held exclusively (the inbox's): it waits for
   * the recording transactions that hold it shared, and holds new ones back only until it commits.
   */
  private boolean advance(int current, Instant now) {
    return ddl(
        "500ms",
        c -> {
          if (table == Table.INBOX) {
            BucketRepository.lockExclusively(c);
          }
          if (!BucketRepository.exists(c, table, current + 1)) {
            return false; // created by the next run first; never move to a missing partition
          }
          return BucketRepository.advance(c, table, current, now);
        });
  }

  private enum Drop {
    DROPPED,
    HELD_BACK,
    KEPT
  }

  /** {@link #dropIfExpired}, leaving it to the next run if another instance got there first. */
  private Drop dropIfExpiredOrLater(int bucket, Instant cutoff) {
    try {
      return dropIfExpired(bucket, cutoff);
    } catch (DataAccessException e) {
      if (retryLater(e)) {
        return Drop.KEPT;
      }
      throw e;
    }
  }

  private Drop dropIfExpired(int bucket, Instant cutoff) {
    // First a look without locks, from the indexes' ends and partial indexes only.
    Drop looks = tx.inTransaction(c -> judge(c, bucket, cutoff));
    if (looks != Drop.DROPPED) {
      return looks;
    }
    // Then the parent's lock first, as every UPDATE and DELETE on the parent takes it before the
    // partitions' (taking the partition's first would deadlock with them), with a short timeout:
    // while it waits, the table's new statements queue behind it.
    Drop[] outcome = {Drop.KEPT};
    ddl(
        "200ms",
        c -> {
          BucketRepository.lockParent(c, table);
          outcome[0] = judge(c, bucket, cutoff); // nothing changes in it from here
          if (outcome[0] == Drop.DROPPED) {
            BucketRepository.drop(c, table, bucket);
          }
          return true;
        });
    return outcome[0];
  }

  /** Whether a past bucket may go: DROPPED if so, else KEPT or HELD_BACK. Index reads only. */
  private Drop judge(Connection c, int bucket, Instant cutoff) throws SQLException {
    Instant latest = BucketRepository.latest(c, table, bucket);
    if (latest != null && !latest.isBefore(cutoff)) {
      return Drop.KEPT;
    }
    return BucketRepository.holdsUnsettled(c, table, bucket) ? Drop.HELD_BACK : Drop.DROPPED;
  }

  private static boolean retryLater(DataAccessException e) {
    return e.getCause() instanceof SQLException sql && RETRY_LATER.contains(sql.getSQLState());
  }

  /**
   * Runs a step in a transaction with a lock timeout; a step that times out on a lock (SQL state
   * 55P03) returns false, to be tried again at the next run.
   */
  private boolean ddl(String lockTimeout, Transactions.Work<Boolean> step) {
    try {
      return tx.inTransaction(
          c -> {
            BucketRepository.lockTimeout(c, lockTimeout);
            return step.run(c);
          });
    } catch (DataAccessException e) {
      if (retryLater(e) && e.getCause() instanceof SQLException sql) {
        LOG.log(
            Level.DEBUG,
            table.name
                + ": maintenance step left to the next run ("
                + sql.getSQLState()
                + ": a lock wait past "
                + lockTimeout
                + ", or another instance's maintenance)");
        return false;
      }
      throw e;
    }
  }
}
