package dev.postbox.runtime.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;

/** The startup durability check against the real databases and their real settings. */
class DurabilityIT {

  private static final String PG = "jdbc:postgresql://127.0.0.1:5432/test";

  @Test
  void anH2FileWithItsDefaultWriteDelayIsRefusedNamingTheSetting() throws Exception {
    Path dir = Files.createTempDirectory("durability-h2");
    try (Connection c = DriverManager.getConnection("jdbc:h2:" + dir.resolve("db"), "sa", "")) {
      Durability d = Durability.of(c, Dialect.H2);
      assertThat(d.level()).isEqualTo(Durability.Level.UNSAFE);
      assertThatThrownBy(() -> d.enforce(false))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("WRITE_DELAY=500")
          .hasMessageContaining(";WRITE_DELAY=0")
          .hasMessageContaining("postbox.durability.accept-unsafe=true");
      d.enforce(true); // the operator's explicit override starts anyway
    }
  }

  @Test
  void anH2FileWithoutWriteDelayStartsWithAWarningThatItNeverFsyncs() throws Exception {
    Path dir = Files.createTempDirectory("durability-h2");
    try (Connection c =
        DriverManager.getConnection("jdbc:h2:" + dir.resolve("db") + ";WRITE_DELAY=0", "sa", "")) {
      Durability d = Durability.of(c, Dialect.H2);
      assertThat(d.level()).isEqualTo(Durability.Level.PROCESS_CRASH_SAFE);
      assertThat(d.describe()).contains("does not fsync per commit");
      d.enforce(false);
    }
  }

  @Test
  void anH2InMemoryDatabaseIsRefused() throws Exception {
    try (Connection c = DriverManager.getConnection("jdbc:h2:mem:durability", "sa", "")) {
      assertThat(Durability.of(c, Dialect.H2).level()).isEqualTo(Durability.Level.UNSAFE);
    }
  }

  @Test
  void postgresqlAsConfiguredHereFsyncsEveryCommit() throws Exception {
    try (Connection c = DriverManager.getConnection(PG, "postgres", "")) {
      Durability d = Durability.of(c, Dialect.POSTGRESQL);
      assertThat(d.level()).isEqualTo(Durability.Level.FSYNC_PER_COMMIT);
      assertThat(d.findings()).isEmpty();
    }
  }

  @Test
  void postgresqlWithSynchronousCommitOffForTheRoleLogsTheWarning() throws Exception {
    String role = "pbx_dur_" + UUID.randomUUID().toString().replace("-", "").substring(0, 10);
    admin("CREATE ROLE " + role + " LOGIN"); // a name made here, never input
    admin("ALTER ROLE " + role + " SET synchronous_commit = off");
    List<LogRecord> logged = new ArrayList<>();
    Logger log = Logger.getLogger(Durability.class.getName());
    Handler capture =
        new Handler() {
          @Override
          public void publish(LogRecord r) {
            logged.add(r);
          }

          @Override
          public void flush() {}

          @Override
          public void close() {}
        };
    log.addHandler(capture);
    try {
      javax.sql.DataSource asRole =
          dev.postbox.runtime.testing.TestDatabase.dataSource(PG + "?user=" + role);
      Durability d = Durability.check(asRole, Dialect.POSTGRESQL, false);
      assertThat(d.level()).isEqualTo(Durability.Level.PROCESS_CRASH_SAFE);
      assertThat(logged)
          .anySatisfy(
              r -> {
                assertThat(r.getLevel()).isEqualTo(java.util.logging.Level.WARNING);
                assertThat(r.getMessage()).contains("synchronous_commit=off");
              });
    } finally {
      log.removeHandler(capture);
      admin("DROP ROLE " + role);
    }
  }

  @Test
  void mariadbAsConfiguredHereFlushesTheLogAtEveryCommit() throws Exception {
    try (Connection c = DriverManager.getConnection("jdbc:mariadb://127.0.0.1:3306/", "root", "")) {
      assertThat(Durability.of(c, Dialect.MARIADB).level())
          .isEqualTo(Durability.Level.FSYNC_PER_COMMIT);
    }
  }

  private static void admin(String sql) throws SQLException {
    try (Connection c = DriverManager.getConnection(PG, "postgres", "");
        Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }
}
