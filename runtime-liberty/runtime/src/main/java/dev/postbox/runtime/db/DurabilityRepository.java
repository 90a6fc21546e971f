package dev.postbox.runtime.db;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.Locale;

/**
 * Reads, per database, the settings that decide whether an acknowledged commit survives a crash
 * (see {@link Durability}); {@link Dialect#durabilitySettings()} gives the one of a dialect.
 */
enum DurabilityRepository {
  POSTGRESQL {
    @Override
    void read(Connection c, List<String> unsafe, List<String> weak) throws SQLException {
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
  },
  MARIADB {
    @Override
    void read(Connection c, List<String> unsafe, List<String> weak) throws SQLException {
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
  },
  H2 {
    @Override
    void read(Connection c, List<String> unsafe, List<String> weak) throws SQLException {
      String url = String.valueOf(c.getMetaData().getURL());
      if (url.toLowerCase(Locale.ROOT).startsWith("jdbc:h2:mem:")) {
        unsafe.add(
            "H2 in-memory database ("
                + url
                + "): every committed transaction is gone when the process ends; use a file"
                + " database, e.g. jdbc:h2:./data/app;WRITE_DELAY=0");
        return;
      }
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
  };

  /**
   * Adds the settings that lose an acknowledged commit on a process crash to {@code unsafe}, and
   * those that lose one only on an OS crash or power failure to {@code weak}.
   */
  abstract void read(Connection c, List<String> unsafe, List<String> weak) throws SQLException;

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
