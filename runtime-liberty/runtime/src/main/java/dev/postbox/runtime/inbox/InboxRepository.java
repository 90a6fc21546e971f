package dev.postbox.runtime.inbox;

import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.retention.DatePartitions;
import dev.postbox.spi.Envelope;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The inbox and attempt tables and the durable duplicate count, in parameterised JDBC on the
 * caller's connection. Dead letters have their own {@link DeadLetterRepository}.
 */
final class InboxRepository {

  private static final String DUPLICATES_COUNTED =
      "SELECT duplicates FROM postbox_inbox_counter WHERE subscription = ?";

  private static final String FINGERPRINT =
      "SELECT fingerprint FROM postbox_inbox WHERE subscription = ? AND event_id = ?";

  /** Rows per multi-row insert: well under MariaDB's 65,535 placeholders per statement. */
  private static final int RETURNING_CHUNK = 1_000;

  private final Dialect dialect;
  private final String recordSql;
  private final String countDuplicatesSql;

  /** Whether the inbox is date-partitioned; looked up at the first recording. */
  private volatile Boolean datePartitioned;

  InboxRepository(Dialect dialect) {
    this.dialect = dialect;
    this.recordSql = dialect.insertInboxIfAbsent();
    this.countDuplicatesSql = dialect.addInboxDuplicates();
  }

  /** Adds to the subscription's durable duplicate count, in the caller's transaction. */
  void countDuplicates(Connection c, String subscription, long n) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(countDuplicatesSql)) {
      ps.setString(1, subscription);
      ps.setLong(2, n);
      ps.executeUpdate();
    }
  }

  /** Duplicates rejected for a subscription since its first delivery; 0 if none. */
  long duplicatesCounted(Connection c, String subscription) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(DUPLICATES_COUNTED)) {
      ps.setString(1, subscription);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getLong(1) : 0;
      }
    }
  }

  /**
   * Records the event as processed by this subscription, unless it already was.
   *
   * @return true if the row is new (the handler must run), false for a duplicate
   */
  boolean record(Connection c, String subscription, Envelope e, String fingerprint, Instant now)
      throws SQLException {
    if (datePartitioned(c)
        && !DatePartitions.inEarlierBuckets(c, subscription, List.of(e.id())).isEmpty()) {
      return false;
    }
    try (PreparedStatement ps = c.prepareStatement(recordSql(c))) {
      bindRecord(ps, 0, subscription, e, fingerprint, true, now);
      return ps.executeUpdate() == 1;
    }
  }

  /**
   * {@link #record} for many events in one round trip; {@code processed} false records them as
   * RECEIVED, for deferred mode. An id that occurs twice in {@code events} is new at most once.
   *
   * @return per event, whether it is new
   * @throws IllegalStateException the driver did not report per-row results (e.g. PostgreSQL's
   *     {@code reWriteBatchedInserts=true}); new and duplicate events could not be told apart
   */
  boolean[] recordAll(
      Connection c,
      String subscription,
      List<Envelope> events,
      List<String> fingerprints,
      boolean processed,
      Instant now)
      throws SQLException {
    if (events.isEmpty()) {
      return new boolean[0]; // no statement that never runs (see LeaseManager)
    }
    // Insert in event-id order, whatever the delivery order: concurrent transactions holding
    // overlapping ids then take their key locks in the same order and do not deadlock.
    Integer[] order = new Integer[events.size()];
    for (int i = 0; i < order.length; i++) {
      order[i] = i;
    }
    java.util.Arrays.sort(order, java.util.Comparator.comparing(i -> events.get(i).id()));
    if (datePartitioned(c)) {
      // The ids an earlier bucket holds are duplicates, found under the bucket lock before
      // anything is inserted; the rest go to the current bucket, whose key catches copies in it.
      Set<String> earlier =
          DatePartitions.inEarlierBuckets(
              c, subscription, events.stream().map(Envelope::id).toList());
      order =
          java.util.Arrays.stream(order)
              .filter(i -> !earlier.contains(events.get(i).id()))
              .toArray(Integer[]::new);
      if (order.length == 0) {
        return new boolean[events.size()];
      }
    }
    if (dialect.insertInboxIfAbsentReturning(1) != null) {
      return recordAllReturning(c, subscription, events, fingerprints, processed, now, order);
    }
    try (PreparedStatement ps = c.prepareStatement(recordSql(c))) {
      for (int i : order) {
        bindRecord(ps, 0, subscription, events.get(i), fingerprints.get(i), processed, now);
        ps.addBatch();
      }
      int[] counts = ps.executeBatch();
      boolean[] fresh = new boolean[events.size()];
      for (int n = 0; n < counts.length; n++) {
        if (counts[n] == java.sql.Statement.SUCCESS_NO_INFO) {
          throw noPerRowCounts();
        }
        fresh[order[n]] = counts[n] == 1;
      }
      return fresh;
    }
  }

  private String recordSql(Connection c) throws SQLException {
    return datePartitioned(c) ? dialect.insertInboxIfAbsentInBucket() : recordSql;
  }

  private boolean datePartitioned(Connection c) throws SQLException {
    Boolean known = datePartitioned;
    if (known == null) {
      known = DatePartitions.isPartitioned(c, dialect, DatePartitions.Table.INBOX);
      datePartitioned = known;
    }
    return known;
  }

  private static IllegalStateException noPerRowCounts() {
    return new IllegalStateException(
        "the JDBC driver does not report per-row insert results (PostgreSQL: turn off"
            + " reWriteBatchedInserts); the inbox cannot tell new events from duplicates");
  }

  /**
   * Where the driver cannot count a batch's rows one by one (MariaDB's sends it as one bulk command
   * and answers "no info" per row), one multi-row insert per chunk returns the ids it inserted.
   */
  private boolean[] recordAllReturning(
      Connection c,
      String subscription,
      List<Envelope> events,
      List<String> fingerprints,
      boolean processed,
      Instant now,
      Integer[] order)
      throws SQLException {
    boolean[] fresh = new boolean[events.size()];
    for (int from = 0; from < order.length; from += RETURNING_CHUNK) {
      int to = Math.min(order.length, from + RETURNING_CHUNK);
      Set<String> inserted = new HashSet<>();
      try (PreparedStatement ps =
          c.prepareStatement(dialect.insertInboxIfAbsentReturning(to - from))) {
        for (int n = from; n < to; n++) {
          int i = order[n];
          bindRecord(
              ps, (n - from) * 8, subscription, events.get(i), fingerprints.get(i), processed, now);
        }
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            inserted.add(rs.getString(1));
          }
        }
      }
      for (int n = from; n < to; n++) {
        // remove: of two deliveries of one id in this statement, only the first is new
        fresh[order[n]] = inserted.remove(events.get(order[n]).id());
      }
    }
    return fresh;
  }

  /**
   * Binds a PROCESSED row (inline mode, replays) or a RECEIVED one waiting for a deferred worker:
   * the eight values of {@link Dialect#INBOX_COLUMNS}, from parameter {@code offset + 1} on.
   */
  private void bindRecord(
      PreparedStatement ps,
      int offset,
      String subscription,
      Envelope e,
      String fingerprint,
      boolean processed,
      Instant now)
      throws SQLException {
    ps.setString(offset + 1, subscription);
    ps.setString(offset + 2, e.id());
    ps.setString(offset + 3, e.key());
    ps.setString(offset + 4, e.type());
    ps.setString(offset + 5, fingerprint);
    ps.setString(offset + 6, processed ? "PROCESSED" : "RECEIVED");
    dialect.bind(ps, offset + 7, now);
    dialect.bind(ps, offset + 8, processed ? now : null);
  }

  /** The fingerprint recorded for an event, if any. */
  Optional<String> fingerprint(Connection c, String subscription, String eventId)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(FINGERPRINT)) {
      ps.setString(1, subscription);
      ps.setString(2, eventId);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Optional.of(rs.getString(1)) : Optional.empty();
      }
    }
  }
}
