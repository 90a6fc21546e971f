package dev.postbox.runtime.db;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import javax.sql.DataSource;

/**
 * How durable a commit is on the database behind a connection, read from the database's own
 * settings at startup. Postbox's promise (a committed outbox row is published; a processed event is
 * never processed again) is only as good as the commit it rests on.
 *
 * <ul>
 *   <li>{@link Level#FSYNC_PER_COMMIT}: an acknowledged commit survives a process crash and an OS
 *       or power failure.
 *   <li>{@link Level#PROCESS_CRASH_SAFE}: it survives a process crash ({@code kill -9}), not
 *       necessarily an OS or power failure. Postbox warns.
 *   <li>{@link Level#UNSAFE}: an acknowledged commit can vanish on a process crash (H2 with a write
 *       delay). Postbox refuses to start unless {@code postbox.durability.accept-unsafe=true}.
 * </ul>
 *
 * @param level the weakest guarantee found
 * @param findings one sentence per setting that weakens it, naming the setting and the fix
 */
public record Durability(Level level, List<String> findings) {

  private static final System.Logger LOG = System.getLogger(Durability.class.getName());

  /** The guarantee an acknowledged commit has. */
  public enum Level {
    /** Lost on a process crash. */
    UNSAFE,
    /** Survives a process crash; may be lost on an OS crash or power failure. */
    PROCESS_CRASH_SAFE,
    /** Flushed to stable storage before the commit is acknowledged. */
    FSYNC_PER_COMMIT
  }

  public Durability {
    findings = List.copyOf(findings);
  }

  /** Reads the settings of the database behind the connection. */
  public static Durability of(Connection c, Dialect dialect) throws SQLException {
    List<String> unsafe = new ArrayList<>();
    List<String> weak = new ArrayList<>();
    switch (dialect) {
      case H2 -> {
        String url = String.valueOf(c.getMetaData().getURL()).toLowerCase(Locale.ROOT);
        if (url.startsWith("jdbc:h2:mem:")) {
          unsafe.add(
              "H2 in-memory database ("
                  + c.getMetaData().getURL()
                  + "): every committed transaction is gone when the process ends; use a file"
                  + " database, e.g. jdbc:h2:./data/app;WRITE_DELAY=0");
        } else {
          long delay = h2Setting(c, "WRITE_DELAY", 500);
          if (delay > 0) {
            unsafe.add(
                "H2 WRITE_DELAY="
                    + delay
                    + ": H2 acknowledges a commit up to "
                    + delay
                    + " ms before it writes it, so a process crash loses acknowledged commits;"
                    + " add ;WRITE_DELAY=0 to the JDBC URL");
          }
          weak.add(
              "H2 does not fsync per commit: a commit survives a process crash, but an OS crash"
                  + " or power failure can lose the last ones; use PostgreSQL or MariaDB where"
                  + " that matters");
        }
      }
      case POSTGRESQL -> {
        if ("off".equals(show(c, "SHOW fsync"))) {
          weak.add(
              "PostgreSQL fsync=off: an OS crash or power failure can lose or corrupt committed"
                  + " data; set fsync=on in postgresql.conf");
        }
        if ("off".equals(show(c, "SHOW synchronous_commit"))) {
          weak.add(
              "PostgreSQL synchronous_commit=off (for this server, database or role): a crash of"
                  + " the database server or the OS, or a power failure, loses the last acknowledged"
                  + " commits (a crash of this application does not); set it to on, e.g. ALTER ROLE"
                  + " <user> RESET synchronous_commit");
        }
      }
      case MARIADB -> {
        String flush = show(c, "SELECT @@innodb_flush_log_at_trx_commit");
        // 1 flushes at every commit; MariaDB's 3 does too, through group commit.
        if (flush != null && !"1".equals(flush) && !"3".equals(flush)) {
          weak.add(
              "MariaDB innodb_flush_log_at_trx_commit="
                  + flush
                  + ": an OS crash or power failure (with 0 also a crash of the database server)"
                  + " loses the last acknowledged commits (a crash of this application does not);"
                  + " set innodb_flush_log_at_trx_commit=1");
        }
      }
    }
    List<String> findings = new ArrayList<>(unsafe);
    findings.addAll(weak);
    Level level =
        !unsafe.isEmpty()
            ? Level.UNSAFE
            : !weak.isEmpty() ? Level.PROCESS_CRASH_SAFE : Level.FSYNC_PER_COMMIT;
    return new Durability(level, findings);
  }

  /**
   * Reads the settings of the database behind the data source at startup: refuses to start on a
   * setting that loses acknowledged commits on a process crash unless the operator accepted it, and
   * logs a warning for one that loses them on an OS or power failure.
   *
   * @param acceptUnsafe {@code postbox.durability.accept-unsafe}
   * @throws IllegalStateException on {@link Level#UNSAFE}, unless accepted
   */
  public static Durability check(DataSource ds, Dialect dialect, boolean acceptUnsafe) {
    Durability d;
    try (Connection c = ds.getConnection()) {
      d = of(c, dialect);
    } catch (SQLException e) {
      throw new DataAccessException(e);
    }
    d.enforce(acceptUnsafe);
    switch (d.level) {
      case UNSAFE ->
          LOG.log(
              System.Logger.Level.WARNING,
              "Postbox starts on a database that can lose acknowledged commits on a process"
                  + " crash, because postbox.durability.accept-unsafe=true: "
                  + d.describe());
      case PROCESS_CRASH_SAFE ->
          LOG.log(System.Logger.Level.WARNING, "Postbox database durability: " + d.describe());
      case FSYNC_PER_COMMIT ->
          LOG.log(System.Logger.Level.INFO, "Postbox database durability: " + d.describe());
    }
    return d;
  }

  /** One line for logs and readiness data, e.g. {@code PROCESS_CRASH_SAFE: H2 does not ...}. */
  public String describe() {
    return findings.isEmpty() ? level.name() : level + ": " + String.join("; ", findings);
  }

  /**
   * Fails on {@link Level#UNSAFE} unless the operator accepted it.
   *
   * @param acceptUnsafe {@code postbox.durability.accept-unsafe}
   * @throws IllegalStateException naming the setting, its fix and the override key
   */
  public void enforce(boolean acceptUnsafe) {
    if (level == Level.UNSAFE && !acceptUnsafe) {
      throw new IllegalStateException(
          "Postbox refuses to start: the database can lose acknowledged commits on a process"
              + " crash, and with them orders and events. "
              + String.join("; ", findings)
              + ". (For a throwaway demo only: postbox.durability.accept-unsafe=true starts"
              + " anyway.)");
    }
  }

  private static long h2Setting(Connection c, String name, long orElse) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT SETTING_VALUE FROM INFORMATION_SCHEMA.SETTINGS WHERE SETTING_NAME = ?")) {
      ps.setString(1, name);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Long.parseLong(rs.getString(1).trim()) : orElse;
      }
    }
  }

  private static String show(Connection c, String sql) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql);
        ResultSet rs = ps.executeQuery()) {
      return rs.next() ? String.valueOf(rs.getString(1)).trim().toLowerCase(Locale.ROOT) : null;
    }
  }
}
