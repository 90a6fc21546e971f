package dev.postbox.runtime.db;

import java.io.IOException;
import java.io.InputStream;
import java.io.Reader;
import java.io.StringReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.ResourceProvider;
import org.flywaydb.core.api.resource.LoadableResource;

/**
 * Applies Postbox's own versioned SQL (Flyway), per database, to the application's data source. Its
 * history lives in {@code postbox_schema_history}, apart from the application's own Flyway history
 * if it has one. EclipseLink's DDL generation is never used.
 */
public final class Migrations {

  /**
   * Every migration, in order; add new versions at the end. They are listed and handed to Flyway
   * rather than found by classpath scanning, which does not work inside application servers' class
   * loaders (Liberty among them).
   */
  static final List<String> FILES =
      List.of(
          "V1__outbox.sql",
          "V2__inbox.sql",
          "V3__inbox_deferred.sql",
          "V4__inbox_counter.sql",
          "V5__idempotency.sql",
          "V6__binary_ids.sql",
          "V7__outbox_redrives.sql",
          "V8__outbox_partial_indexes.sql");

  private Migrations() {}

  /** Migrates to the latest version and returns the dialect found. */
  public static Dialect migrate(DataSource dataSource) {
    Dialect dialect = dialect(dataSource);
    Flyway.configure()
        .dataSource(dataSource)
        .resourceProvider(new ListedResources(dialect))
        // Nothing to scan: the migrations are listed, and scanning logs errors in app servers.
        // (Flyway's constructor still scans classpath:db/callback for Java callbacks, whatever the
        // configuration; this jar's empty db/callback/flyway.location is the marker that lets it
        // resolve that folder in IBM's class loaders instead of logging an error at every start.)
        .locations(new String[0])
        .callbackLocations(new String[0])
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

  /** Serves the listed migration files of one dialect from this jar's class loader. */
  private record ListedResources(Dialect dialect) implements ResourceProvider {
    @Override
    public LoadableResource getResource(String name) {
      return FILES.contains(name) ? resource(name) : null;
    }

    @Override
    public Collection<LoadableResource> getResources(String prefix, String[] suffixes) {
      List<LoadableResource> out = new ArrayList<>();
      for (String file : FILES) {
        boolean suffixOk = false;
        for (String suffix : suffixes) {
          suffixOk |= file.endsWith(suffix);
        }
        if (file.startsWith(prefix) && suffixOk) {
          out.add(resource(file));
        }
      }
      return out;
    }

    private LoadableResource resource(String file) {
      String path = dialect.migrationLocation().substring("classpath:".length()) + "/" + file;
      String sql;
      try (InputStream in = Migrations.class.getClassLoader().getResourceAsStream(path)) {
        if (in == null) {
          throw new IllegalStateException(
              "migration " + path + " is missing from the postbox-runtime jar");
        }
        sql = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      return new LoadableResource() {
        @Override
        public Reader read() {
          return new StringReader(sql);
        }

        @Override
        public String getAbsolutePath() {
          return path;
        }

        @Override
        public String getAbsolutePathOnDisk() {
          return path;
        }

        @Override
        public String getFilename() {
          return file;
        }

        @Override
        public String getRelativePath() {
          return file;
        }
      };
    }
  }
}
