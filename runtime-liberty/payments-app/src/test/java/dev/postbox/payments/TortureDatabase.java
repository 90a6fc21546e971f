package dev.postbox.payments;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The crash harness's database: what the server is told to use, how the harness reads it, and (on
 * PostgreSQL) how it is stopped for an outage.
 */
abstract class TortureDatabase implements AutoCloseable {

  /** A name made here, never input: safe in DDL, which takes no parameters. */
  final String name = "torture_" + Long.toHexString(System.nanoTime());

  /** postgresql, mariadb or h2. */
  abstract String kind();

  /** Server variables; none for the embedded default, which must run as shipped. */
  abstract Map<String, String> serverVariables();

  /**
   * A connection for the harness's readings. On the embedded H2 only once the server has stopped:
   * the server's process owns the file while it runs.
   */
  abstract Connection connect() throws SQLException;

  /** Whether the harness may read the database while the server runs. */
  boolean readableWhileServing() {
    return true;
  }

  /** Whether {@link #pause} can stop the database server for an outage. */
  boolean canPause() {
    return false;
  }

  void pause(Duration outage) throws Exception {
    throw new UnsupportedOperationException(kind() + " is not paused by the harness");
  }

  static TortureDatabase of(String kind, Path serverDir) {
    return switch (kind) {
      case "postgresql" -> new Postgres();
      case "mariadb" -> new MariaDb();
      case "h2" -> new EmbeddedH2(serverDir);
      default -> throw new IllegalArgumentException("no torture database '" + kind + "'");
    };
  }

  /** The local PostgreSQL, a schema of this run's own. */
  static final class Postgres extends TortureDatabase {
    private static final String PG = "jdbc:postgresql://127.0.0.1:5432/test";

    Postgres() {
      admin(PG + "?user=postgres", "CREATE SCHEMA " + name);
    }

    @Override
    String kind() {
      return "postgresql";
    }

    @Override
    Map<String, String> serverVariables() {
      return Map.of(
          "db.url", PG + "?currentSchema=" + name,
          "db.driver", "org.postgresql.Driver",
          "db.user", "postgres");
    }

    @Override
    Connection connect() throws SQLException {
      return DriverManager.getConnection(PG + "?currentSchema=" + name, "postgres", "");
    }

    @Override
    boolean canPause() {
      return true;
    }

    @Override
    void pause(Duration outage) throws Exception {
      String version;
      try (var versions = Files.list(Path.of("/etc/postgresql"))) {
        version = versions.findFirst().orElseThrow().getFileName().toString();
      }
      exec("pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "stop", "-m", "fast");
      Thread.sleep(outage.toMillis()); // the outage itself: a fixed span by design
      exec("pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "start");
    }

    @Override
    public void close() {
      admin(PG + "?user=postgres", "DROP SCHEMA IF EXISTS " + name + " CASCADE");
    }
  }

  /** The local MariaDB, a database of this run's own. */
  static final class MariaDb extends TortureDatabase {
    private static final String MARIADB = "jdbc:mariadb://127.0.0.1:3306/";

    MariaDb() {
      admin(MARIADB + "?user=root&password=", "CREATE DATABASE " + name);
    }

    @Override
    String kind() {
      return "mariadb";
    }

    @Override
    Map<String, String> serverVariables() {
      return Map.of(
          "db.url", MARIADB + name,
          "db.driver", "org.mariadb.jdbc.Driver",
          "db.user", "root");
    }

    @Override
    Connection connect() throws SQLException {
      return DriverManager.getConnection(MARIADB + name, "root", "");
    }

    @Override
    public void close() {
      admin(MARIADB + "?user=root&password=", "DROP DATABASE IF EXISTS " + name);
    }
  }

  /**
   * The embedded default: the H2 file of server.xml's default {@code db.url}, in the server's own
   * folder, used exactly as shipped.
   */
  static final class EmbeddedH2 extends TortureDatabase {
    private final Path file;

    EmbeddedH2(Path serverDir) {
      this.file = serverDir.resolve("data/payments");
    }

    @Override
    String kind() {
      return "h2";
    }

    @Override
    Map<String, String> serverVariables() {
      return Map.of();
    }

    @Override
    boolean readableWhileServing() {
      return false;
    }

    @Override
    Connection connect() throws SQLException {
      return DriverManager.getConnection(
          "jdbc:h2:" + file.toAbsolutePath() + ";IFEXISTS=TRUE", "sa", "");
    }

    @Override
    public void close() {}
  }

  private static void admin(String url, String sql) {
    try (Connection c = DriverManager.getConnection(url);
        Statement s = c.createStatement()) {
      s.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException(sql, e);
    }
  }

  private static void exec(String... command) throws Exception {
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new IllegalStateException(String.join(" ", command) + " failed: " + out);
    }
  }
}
