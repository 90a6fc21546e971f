package dev.postbox.runtime.db;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.Locale;

/**
 * What differs between the databases Postbox supports: row-limit syntax, claim locking, bounded
 * deletes, insert-if-absent, and how timestamps are bound. Every statement is parameterised; only
 * fixed SQL fragments differ.
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
    public String insertInstanceIfAbsent() {
      return "INSERT INTO postbox_relay_instance (instance_id, heartbeat_at) VALUES (?, ?)"
          + " ON CONFLICT (instance_id) DO UPDATE SET heartbeat_at = EXCLUDED.heartbeat_at";
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
    public String deleteSettledBatch() {
      // MariaDB refuses LIMIT inside an IN subquery, but allows it on DELETE itself.
      return "DELETE FROM postbox_outbox WHERE status IN ('DISPATCHED', 'DISCARDED')"
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
  };

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
   * (PostgreSQL {@code LISTEN/NOTIFY}, {@link dev.postbox.runtime.relay.OutboxNotifications});
   * elsewhere the holder finds the rows at its next poll.
   */
  public boolean canAnnounce() {
    return false;
  }

  /** The row-limit clause with one {@code ?} for the count. */
  public String limit() {
    return limit;
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
    return "DELETE FROM postbox_outbox WHERE id IN (SELECT id FROM postbox_outbox"
        + " WHERE status IN ('DISPATCHED', 'DISCARDED') AND dispatched_at < ? ORDER BY id "
        + limit
        + ")";
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
}
