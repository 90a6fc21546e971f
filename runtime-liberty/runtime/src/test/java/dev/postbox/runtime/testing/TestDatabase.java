package dev.postbox.runtime.testing;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * A fresh, empty database on a real server for one test class: a schema of its own on the local
 * PostgreSQL, a database of its own on the local MariaDB, or an in-memory H2. Dropped on close.
 */
public final class TestDatabase implements AutoCloseable {

  /** The servers tests run against. */
  public enum Kind {
    POSTGRESQL,
    MARIADB,
    H2
  }

  private final Kind kind;
  private final String name =
      "pbx_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
  private final String url;
  private HikariDataSource pool;

  private TestDatabase(Kind kind) {
    this.kind = kind;
    this.url =
        switch (kind) {
          case POSTGRESQL ->
              "jdbc:postgresql://127.0.0.1:5432/test?user=postgres&currentSchema=" + name;
          case MARIADB -> "jdbc:mariadb://127.0.0.1:3306/" + name + "?user=root&password=";
          case H2 -> "jdbc:h2:mem:" + name + ";DB_CLOSE_DELAY=-1;LOCK_TIMEOUT=30000";
        };
  }

  public static TestDatabase create(Kind kind) {
    TestDatabase db = new TestDatabase(kind);
    db.admin("CREATE");
    return db;
  }

  /** The JDBC URL, user and password included. */
  public String url() {
    return url;
  }

  public Kind kind() {
    return kind;
  }

  /** Runs one statement (DDL for a test's own tables). */
  public void execute(String sql) {
    try (Connection c = dataSource().getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException(sql, e);
    }
  }

  /** A single number from a query, e.g. a count. */
  public long count(String sql) {
    try (Connection c = dataSource().getConnection();
        Statement s = c.createStatement();
        java.sql.ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    } catch (SQLException e) {
      throw new IllegalStateException(sql, e);
    }
  }

  /** The PostgreSQL schema or MariaDB database name. */
  public String schemaName() {
    return name;
  }

  /**
   * The database's connections, pooled as an application server pools them: a new PostgreSQL
   * connection costs a backend process (25-30 ms here), which made the relay's and the inbox's
   * contracts spend most of their time connecting. A returned connection is rolled back if its
   * transaction was left open and reset to auto-commit and its isolation, as Liberty's pool does.
   * The pool is closed with the database.
   */
  public synchronized DataSource dataSource() {
    if (pool == null) {
      HikariConfig config = new HikariConfig();
      config.setJdbcUrl(url);
      config.setPoolName(name);
      config.setMaximumPoolSize(40);
      config.setMinimumIdle(0);
      pool = new HikariDataSource(config);
    }
    return pool;
  }

  /** Connections straight from the driver for any URL (e.g. as another database role). */
  public static DataSource dataSource(String url) {
    return new SimpleDataSource(url);
  }

  @Override
  public void close() {
    synchronized (this) {
      if (pool != null) {
        pool.close();
      }
    }
    admin("DROP");
  }

  private void admin(String verb) {
    String sql =
        switch (kind) {
          case POSTGRESQL ->
              verb.equals("CREATE") ? "CREATE SCHEMA " + name : "DROP SCHEMA " + name + " CASCADE";
          case MARIADB -> verb + " DATABASE " + name;
          case H2 -> verb.equals("CREATE") ? null : "SHUTDOWN";
        };
    if (sql == null) {
      return;
    }
    String adminUrl =
        switch (kind) {
          case POSTGRESQL -> "jdbc:postgresql://127.0.0.1:5432/test?user=postgres";
          case MARIADB -> "jdbc:mariadb://127.0.0.1:3306/?user=root&password=";
          case H2 -> url;
        };
    // The names are generated here, never user input; DDL cannot take them as parameters.
    try (Connection c = DriverManager.getConnection(adminUrl);
        Statement s = c.createStatement()) {
      s.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException(verb + " test database " + name + " failed", e);
    }
  }

  private record SimpleDataSource(String url) implements DataSource {
    @Override
    public Connection getConnection() throws SQLException {
      return DriverManager.getConnection(url);
    }

    @Override
    public Connection getConnection(String user, String password) throws SQLException {
      return getConnection();
    }

    @Override
    public PrintWriter getLogWriter() {
      return null;
    }

    @Override
    public void setLogWriter(PrintWriter out) {}

    @Override
    public void setLoginTimeout(int seconds) {}

    @Override
    public int getLoginTimeout() {
      return 0;
    }

    @Override
    public Logger getParentLogger() {
      return Logger.getGlobal();
    }

    @Override
    public <T> T unwrap(Class<T> iface) throws SQLException {
      throw new SQLException("not a wrapper");
    }

    @Override
    public boolean isWrapperFor(Class<?> iface) {
      return false;
    }
  }
}
