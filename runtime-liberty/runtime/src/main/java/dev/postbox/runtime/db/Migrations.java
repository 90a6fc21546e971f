package dev.postbox.runtime.db;

import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;

/**
 * Applies Postbox's own versioned SQL (Flyway), per database, to the application's data source. Its
 * history lives in {@code postbox_schema_history}, apart from the application's own Flyway history
 * if it has one. EclipseLink's DDL generation is never used.
 */
public final class Migrations {

  private Migrations() {}

  /** Migrates to the latest version and returns the dialect found. */
  public static Dialect migrate(DataSource dataSource) {
    Dialect dialect = dialect(dataSource);
    Flyway.configure()
        .dataSource(dataSource)
        .locations(dialect.migrationLocation())
        .table("postbox_schema_history")
        .baselineOnMigrate(true)
        .baselineVersion("0")
        .load()
        .migrate();
    return dialect;
  }

  /** The dialect of a data source's database. */
  public static Dialect dialect(DataSource dataSource) {
    try (Connection c = dataSource.getConnection()) {
      return Dialect.of(c);
    } catch (SQLException e) {
      throw new DataAccessException(e);
    }
  }
}
