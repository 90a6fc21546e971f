package dev.postbox.runtime.db;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.runtime.testing.TestDatabase;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.output.MigrateResult;
import org.junit.jupiter.api.Test;

/**
 * Postbox's schema beside an application that runs Flyway of its own, with Flyway's defaults, on
 * the same database: neither picks up the other's scripts, and each keeps its own history.
 */
class MigrationsIT {

  @Test
  void anApplicationsOwnFlywayNeitherFindsNorDisturbsPostboxsMigrations() {
    try (TestDatabase db = TestDatabase.create(TestDatabase.Kind.H2)) {
      // The application's Flyway, with every default: classpath:db/migration,
      // flyway_schema_history.
      MigrateResult app = Flyway.configure().dataSource(db.dataSource()).load().migrate();
      assertThat(app.migrationsExecuted).as("only the application's own V1").isEqualTo(1);
      // Postbox's scripts live under db/postbox/ on the class path; the checkout's own directory
      // may well be called postbox, so only that segment counts.
      assertThat(app.migrations)
          .extracting(m -> m.filepath.replace('\\', '/'))
          .allMatch(p -> p.endsWith("/db/migration/V1__it_app_orders.sql"))
          .noneMatch(p -> p.contains("/db/postbox/"));

      assertThat(Migrations.migrate(db.dataSource())).isEqualTo(Dialect.H2);
      assertThat(
              db.count(
                  "SELECT COUNT(*) FROM \"postbox_schema_history\""
                      + " WHERE \"type\" = 'SQL' AND \"success\""))
          .isEqualTo(Migrations.FILES.size());
      long postboxHistory = db.count("SELECT COUNT(*) FROM \"postbox_schema_history\"");
      assertThat(db.count("SELECT COUNT(*) FROM postbox_outbox")).isZero();

      // Both again: nothing left to do for either.
      assertThat(Flyway.configure().dataSource(db.dataSource()).load().migrate().migrationsExecuted)
          .isZero();
      Migrations.migrate(db.dataSource());
      assertThat(db.count("SELECT COUNT(*) FROM \"postbox_schema_history\""))
          .isEqualTo(postboxHistory);
      assertThat(db.count("SELECT COUNT(*) FROM \"flyway_schema_history\" WHERE \"type\" = 'SQL'"))
          .as("the application's history holds its own script only")
          .isEqualTo(1);
    }
  }
}
