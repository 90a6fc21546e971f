package dev.postbox.runtime.db;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.Collections;
import java.util.Locale;

/**
 * What differs between the databases Postbox supports, in one place per database: row-limit syntax,
 * claim locking, bounded deletes, insert-if-absent and upserts, how timestamps are bound, and the
 * settings that decide durability ({@link DurabilityRepository} reads them). Each statement that
 * differs is a named member, overridden per database; no class outside this one switches on the
 * dialect (reading a driver's SQL states and error codes, in the inbox's failure handling, and
 * PostgreSQL's LISTEN connection, in the relay's notifications, are not SQL and stay with their
 * features). Every statement is parameterised; only fixed SQL fragments differ. (Over 400 lines: a
 * lookup table, one row of statements per database, which is the point of keeping it in one place.)
 */
public enum Dialect {
  POSTGRESQL("postgresql", "FETCH FIRST ? ROWS ONLY", "FOR UPDATE") {
    @Override
    public String now() {
      return "clock_timestamp()"; // the time now, not the transaction's start
    }

    @Override
    public String insertLeaseIfAbsent() {
      return "INSERT INTO postbox_lease (partition_no, version) VALUES (?, 0) ON CONFLICT DO NOTHING";
    }

    @Override
    public boolean canAnnounce() {
      return true;
    }

    @Override
    public boolean partitionsByDate() {
      return true;
    }

    @Override
    public String partitionsWithWork() {
      // One probe of the due index per lease row, each stopping at its first due row: the
      // partial index leads with the partition, and PostgreSQL has no skip scan, so the plain
      // query would read every pending row, due or not (a whole backlog held by an outage).
      // LATERAL with LIMIT keeps it a loop of probes whatever the plan's estimates (a generic
      // plan's included); a semi-join could turn into a scan of the table. ORDER BY the due time
      // makes the due index the one that answers without a sort: the claim index, which has the
      // same predicate, would filter every row of the partition that is not due.
      return "SELECT l.partition_no FROM postbox_lease l CROSS JOIN LATERAL (SELECT 1 AS due"
          + " FROM postbox_outbox o WHERE o.partition_no = l.partition_no AND o.status = 'PENDING'"
          + " AND o.next_attempt_at <= ? ORDER BY o.next_attempt_at FETCH FIRST 1 ROWS ONLY) d";
    }

    @Override
    public String insertInstanceIfAbsent() {
      return "INSERT INTO postbox_relay_instance (instance_id, heartbeat_at) VALUES (?, ?)"
          + " ON CONFLICT (instance_id) DO UPDATE SET heartbeat_at = EXCLUDED.heartbeat_at";
    }

    @Override
    public String insertInboxIfAbsent() {
      return "INSERT INTO postbox_inbox ("
          + INBOX_COLUMNS
          + ") VALUES "
          + INBOX_VALUES
          + " ON CONFLICT (subscription, event_id) DO NOTHING";
    }

    @Override
    public String insertInboxIfAbsentInBucket() {
      // the date-partitioned inbox's key, (subscription, event_id, bucket), names the bucket the
      // column's default chooses; this statement on the plain inbox fails, and the plain one on
      // this inbox (an instance that has not seen the conversion) fails too: neither skips a row
      return "INSERT INTO postbox_inbox ("
          + INBOX_COLUMNS
          + ") VALUES "
          + INBOX_VALUES
          + " ON CONFLICT (subscription, event_id, bucket) DO NOTHING";
    }

    @Override
    public String addInboxDuplicates() {
      return "INSERT INTO postbox_inbox_counter (subscription, duplicates) VALUES (?, ?)"
          + " ON CONFLICT (subscription) DO UPDATE"
          + " SET duplicates = postbox_inbox_counter.duplicates + EXCLUDED.duplicates";
    }

    @Override
    public String deleteProcessedInboxBatch() {
      // ONLY: a ctid is unique within one table, so on a date-partitioned inbox (whose parent
      // holds no rows itself) this deletes nothing rather than rows of other buckets
      return "DELETE FROM postbox_inbox WHERE ctid = ANY(ARRAY(SELECT ctid FROM ONLY"
          + " postbox_inbox WHERE received_at < ? AND status = 'PROCESSED' LIMIT ?))";
    }
  },
  MARIADB("mariadb", "LIMIT ?", "FOR UPDATE") {
    @Override
    public String now() {
      return "UTC_TIMESTAMP(6)"; // DATETIME(6) columns hold UTC
    }

    @Override
    public String insertLeaseIfAbsent() {
      return "INSERT IGNORE INTO postbox_lease (partition_no, version) VALUES (?, 0)";
    }

    @Override
    public String insertInstanceIfAbsent() {
      return "INSERT INTO postbox_relay_instance (instance_id, heartbeat_at) VALUES (?, ?)"
          + " ON DUPLICATE KEY UPDATE heartbeat_at = VALUES(heartbeat_at)";
    }

    @Override
    String deleteSettledBatch(String statuses) {
      // MariaDB refuses LIMIT inside an IN subquery, but allows it on DELETE itself.
      return "DELETE FROM postbox_outbox WHERE status IN "
          + statuses
          + " AND dispatched_at < ? ORDER BY id LIMIT ?";
    }

    @Override
    public void bind(PreparedStatement ps, int index, Instant time) throws SQLException {
      // DATETIME(6) has no zone: Postbox stores UTC.
      ps.setObject(index, time == null ? null : LocalDateTime.ofInstant(time, ZoneOffset.UTC));
    }

    @Override
    public Instant read(ResultSet rs, String column) throws SQLException {
      LocalDateTime t = rs.getObject(column, LocalDateTime.class);
      return t == null ? null : t.toInstant(ZoneOffset.UTC);
    }

    // INSERT IGNORE reports 0 rows for a duplicate; ON DUPLICATE KEY UPDATE would report 1 with
    // the driver's default "found rows" counting.
    @Override
    public String insertInboxIfAbsent() {
      return "INSERT IGNORE INTO postbox_inbox (" + INBOX_COLUMNS + ") VALUES " + INBOX_VALUES;
    }

    /**
     * MariaDB's driver answers a batch of inserts with "no info" per row (it sends them as one bulk
     * command), whatever the statement; so one multi-row {@code INSERT IGNORE ... RETURNING} names
     * the rows it inserted instead. Ignored rows, duplicates within the statement included, are not
     * returned.
     */
    @Override
    public String insertInboxIfAbsentReturning(int rows) {
      return "INSERT IGNORE INTO postbox_inbox ("
          + INBOX_COLUMNS
          + ") VALUES "
          + String.join(", ", Collections.nCopies(rows, INBOX_VALUES))
          + " RETURNING event_id";
    }

    @Override
    public String addInboxDuplicates() {
      return "INSERT INTO postbox_inbox_counter (subscription, duplicates) VALUES (?, ?)"
          + " ON DUPLICATE KEY UPDATE duplicates = duplicates + VALUES(duplicates)";
    }

    // MariaDB refuses a subquery on the UPDATE's own table, but takes it as a derived table.
    @Override
    public String promoteInboxHead() {
      return "UPDATE postbox_inbox_pending p JOIN (SELECT MIN(seq) AS oldest FROM"
          + " postbox_inbox_pending WHERE subscription = ? AND event_key = ?) m"
          + " ON p.seq = m.oldest SET p.head = TRUE WHERE p.head = FALSE";
    }

    @Override
    public String deleteProcessedInboxBatch() {
      return "DELETE FROM postbox_inbox WHERE received_at < ? AND status = 'PROCESSED'"
          + " ORDER BY received_at LIMIT ?";
    }

    @Override
    public boolean defaultsToRepeatableRead() {
      return true;
    }
  },
  H2("h2", "FETCH FIRST ? ROWS ONLY", "FOR UPDATE") {
    @Override
    public String insertLeaseIfAbsent() {
      return "INSERT INTO postbox_lease (partition_no, version) SELECT ?, 0 FROM DUAL"
          + " WHERE NOT EXISTS (SELECT 1 FROM postbox_lease WHERE partition_no = ?)";
    }

    @Override
    public boolean insertLeaseNeedsKeyTwice() {
      return true;
    }

    @Override
    public String insertInstanceIfAbsent() {
      return "MERGE INTO postbox_relay_instance (instance_id, heartbeat_at) KEY (instance_id) VALUES (?, ?)";
    }

    @Override
    public String insertInboxIfAbsent() {
      return "MERGE INTO postbox_inbox t USING (VALUES (CAST(? AS VARCHAR(255)),"
          + " CAST(? AS VARCHAR(256)))) s(subscription, event_id)"
          + " ON t.subscription = s.subscription AND t.event_id = s.event_id"
          + " WHEN NOT MATCHED THEN INSERT ("
          + INBOX_COLUMNS
          + ") VALUES (s.subscription, s.event_id, ?, ?, ?, ?, ?, ?)";
    }

    @Override
    public String addInboxDuplicates() {
      return "MERGE INTO postbox_inbox_counter t USING (VALUES (CAST(? AS VARCHAR(255)),"
          + " CAST(? AS BIGINT))) s(subscription, n) ON t.subscription = s.subscription"
          + " WHEN MATCHED THEN UPDATE SET duplicates = t.duplicates + s.n"
          + " WHEN NOT MATCHED THEN INSERT (subscription, duplicates)"
          + " VALUES (s.subscription, s.n)";
    }

    @Override
    public String deleteProcessedInboxBatch() {
      return "DELETE FROM postbox_inbox WHERE received_at < ? AND status = 'PROCESSED'"
          + " FETCH FIRST ? ROWS ONLY";
    }
  };

  /**
   * The inbox row's columns, in the order {@link #insertInboxIfAbsent()} and {@link
   * #insertInboxIfAbsentReturning(int)} take their values.
   */
  public static final String INBOX_COLUMNS =
      "subscription, event_id, event_key, event_type, fingerprint, status, received_at,"
          + " processed_at";

  private static final String INBOX_VALUES = "(?, ?, ?, ?, ?, ?, ?, ?)";

  private final String migrationFolder;
  private final String limit;
  private final String claimLock;

  Dialect(String migrationFolder, String limit, String claimLock) {
    this.migrationFolder = migrationFolder;
    this.limit = limit;
    this.claimLock = claimLock;
  }

  /** The dialect of the database behind a connection. */
  public static Dialect of(Connection c) throws SQLException {
    String product = c.getMetaData().getDatabaseProductName().toLowerCase(Locale.ROOT);
    if (product.contains("postgres")) {
      return POSTGRESQL;
    }
    if (product.contains("mariadb") || product.contains("mysql")) {
      return MARIADB;
    }
    if (product.contains("h2")) {
      return H2;
    }
    throw new IllegalStateException(
        "unsupported database '"
            + product
            + "': Postbox supports PostgreSQL, MariaDB/MySQL and H2");
  }

  /**
   * {@code classpath:db/postbox/<folder>}: not under Flyway's default {@code db/migration}, where
   * an application's own Flyway would find these scripts and try to apply them to its own history.
   */
  public String migrationLocation() {
    return "classpath:db/postbox/" + migrationFolder;
  }

  /** The channel on which PostgreSQL announces committed outbox rows' partitions. */
  public static final String OUTBOX_CHANNEL = "postbox_outbox";

  /**
   * Whether instances can announce committed partitions to each other through the database
   * (PostgreSQL {@code LISTEN/NOTIFY}, {@code relay.OutboxNotifications}); elsewhere the holder
   * finds the rows at its next poll.
   */
  public boolean canAnnounce() {
    return false;
  }

  /**
   * Whether the outbox and the inbox can be date-partitioned ({@code postbox.date-partitions},
   * {@code retention.DatePartitions}): PostgreSQL's declarative partitioning. Its migrations are in
   * {@link #migrationLocation()} with the suffix {@code -date-partitions}.
   */
  public boolean partitionsByDate() {
    return false;
  }

  /** The row-limit clause with one {@code ?} for the count. */
  public String limit() {
    return limit;
  }

  /**
   * The limit and lock of a claim among competitors: {@link #limit()} (one {@code ?} for the count)
   * and {@code FOR UPDATE SKIP LOCKED}, so that each takes rows the others do not hold and none
   * waits on another's lock. Used where several instances or workers compete for rows (lease
   * takeover, the deferred inbox's heads), never for a partition's outbox rows (see {@link
   * #claimLock()}).
   */
  public String limitSkippingLocked() {
    return " " + limit + " FOR UPDATE SKIP LOCKED";
  }

  /**
   * The row-claim lock clause: {@code FOR UPDATE}, deliberately without {@code SKIP LOCKED}.
   *
   * <p>A partition is already published by one transaction at a time (its lease row is locked for
   * the batch), so no legitimate competitor for its rows exists and skipping buys nothing. It can
   * only do harm: a row locked by anything else (on InnoDB, a neighbouring partition's claim takes
   * next-key locks that spill onto this partition's first rows) would be skipped, and a later row
   * of the same key published first. {@code RelayContract} caught exactly that on MariaDB.
   */
  public String claimLock() {
    return claimLock;
  }

  /** Inserts a lease row for a partition unless it exists; one or two {@code ?} (the partition). */
  public abstract String insertLeaseIfAbsent();

  /** Whether {@link #insertLeaseIfAbsent()} takes the partition twice. */
  public boolean insertLeaseNeedsKeyTwice() {
    return false;
  }

  /** Inserts or refreshes an instance heartbeat: (instance id, heartbeat time). */
  public abstract String insertInstanceIfAbsent();

  /** Deletes at most {@code ?} settled rows settled before {@code ?}: (cutoff, limit). */
  public String deleteSettledBatch() {
    return deleteSettledBatch("('DISPATCHED', 'DISCARDED')");
  }

  /**
   * Deletes at most {@code ?} cancelled or expired rows ended before {@code ?}: (cutoff, limit). A
   * statement apart from {@link #deleteSettledBatch()}, so each reads its own partial index.
   */
  public String deleteEndedBatch() {
    return deleteSettledBatch("('CANCELLED', 'EXPIRED')");
  }

  String deleteSettledBatch(String statuses) {
    return "DELETE FROM postbox_outbox WHERE id IN (SELECT id FROM postbox_outbox"
        + " WHERE status IN "
        + statuses
        + " AND dispatched_at < ? ORDER BY id "
        + limit
        + ")";
  }

  /** The partitions that have due pending outbox rows: one {@code ?}, now. */
  public String partitionsWithWork() {
    return "SELECT DISTINCT partition_no FROM postbox_outbox WHERE status = 'PENDING'"
        + " AND next_attempt_at <= ?";
  }

  /** The SQL expression for the database's clock, now, readable with {@link #read}. */
  public String now() {
    return "CURRENT_TIMESTAMP";
  }

  /**
   * The database's clock: the one time every instance shares. Leases are written and compared in
   * it, so instances whose own clocks disagree still agree on when a lease ends.
   */
  public Instant databaseNow(Connection c) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT " + now() + " AS db_now");
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      return read(rs, "db_now");
    }
  }

  /** Binds an instant to a timestamp column. */
  public void bind(PreparedStatement ps, int index, Instant time) throws SQLException {
    ps.setObject(index, time == null ? null : OffsetDateTime.ofInstant(time, ZoneOffset.UTC));
  }

  /** Reads a timestamp column as an instant; null stays null. */
  public Instant read(ResultSet rs, String column) throws SQLException {
    OffsetDateTime t = rs.getObject(column, OffsetDateTime.class);
    return t == null ? null : t.toInstant();
  }

  /**
   * Records an event in a subscription's inbox unless it is there: the eight values of {@link
   * #INBOX_COLUMNS}. Reports 1 row if new, 0 for a duplicate, and never aborts the transaction on a
   * duplicate, so no caught exception decides.
   */
  public abstract String insertInboxIfAbsent();

  /**
   * {@link #insertInboxIfAbsent()} for a date-partitioned inbox ({@link #partitionsByDate()}): a
   * duplicate within the current bucket; null where the inbox cannot be partitioned.
   */
  public String insertInboxIfAbsentInBucket() {
    return null;
  }

  /**
   * {@link #insertInboxIfAbsent()} for {@code rows} rows in one statement that returns the {@code
   * event_id} of each row it inserted; null where a JDBC batch of {@link #insertInboxIfAbsent()}
   * reports per-row counts instead.
   */
  public String insertInboxIfAbsentReturning(int rows) {
    return null;
  }

  /** Adds to a subscription's durable duplicate count: (subscription, how many). */
  public abstract String addInboxDuplicates();

  /**
   * Makes a key's oldest pending event its head, unless one is: (subscription, key). Reports 1 row
   * if it promoted one.
   */
  public String promoteInboxHead() {
    return "UPDATE postbox_inbox_pending SET head = TRUE WHERE head = FALSE AND seq ="
        + " (SELECT MIN(seq) FROM postbox_inbox_pending WHERE subscription = ?"
        + " AND event_key = ?)";
  }

  /** Deletes at most {@code ?} processed inbox rows received before {@code ?}: (cutoff, limit). */
  public abstract String deleteProcessedInboxBatch();

  /**
   * Whether a new transaction runs at REPEATABLE READ unless told otherwise (InnoDB); Postbox's
   * transactions run at READ COMMITTED.
   */
  public boolean defaultsToRepeatableRead() {
    return false;
  }

  /** The reading of this database's durability settings. */
  DurabilityRepository durabilitySettings() {
    return DurabilityRepository.valueOf(name());
  }
}
