package dev.postbox.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Migrations;
import dev.postbox.runtime.db.Transactions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.util.UUID;

/**
 * A fresh schema on the local PostgreSQL (127.0.0.1:5432, database {@code test}) with Postbox's
 * tables and a HikariCP pool on it; dropped on close.
 */
public final class PostgresSchema implements AutoCloseable {

  static final String SERVER = "jdbc:postgresql://127.0.0.1:5432/test?user=postgres";

  public final String name =
      "bench_" + UUID.randomUUID().toString().replace("-", "").substring(0, 10);
  public final HikariDataSource pool;
  public final Dialect dialect;
  public final Transactions tx;

  /**
   * @param urlOptions extra JDBC URL options, e.g. {@code &reWriteBatchedInserts=true} (which the
   *     inbox must not have: it hides per-row batch results)
   */
  public PostgresSchema(String urlOptions) throws Exception {
    try (Connection c = DriverManager.getConnection(SERVER);
        Statement s = c.createStatement()) {
      s.execute("CREATE SCHEMA " + name); // a generated name, not input
    }
    HikariConfig hc = new HikariConfig();
    hc.setJdbcUrl(SERVER + "&currentSchema=" + name + urlOptions);
    hc.setMaximumPoolSize(20);
    pool = new HikariDataSource(hc);
    dialect = Migrations.migrate(pool);
    tx = Transactions.jdbc(pool);
  }

  /** The server's version, as {@code SHOW server_version} gives it, for a report. */
  public static String version() throws Exception {
    try (Connection c = DriverManager.getConnection(SERVER);
        Statement s = c.createStatement();
        java.sql.ResultSet rs = s.executeQuery("SHOW server_version")) {
      rs.next();
      return "PostgreSQL " + rs.getString(1);
    }
  }

  /** Runs DDL for a benchmark's own tables. */
  public void execute(String ddl) {
    tx.inTransaction(
        c -> {
          try (PreparedStatement ps = c.prepareStatement(ddl)) {
            ps.execute();
          }
          return null;
        });
  }

  @Override
  public void close() throws Exception {
    pool.close();
    try (Connection c = DriverManager.getConnection(SERVER);
        PreparedStatement ps = c.prepareStatement("DROP SCHEMA " + name + " CASCADE")) {
      ps.execute();
    }
  }
}
