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
          "V8__outbox_partial_indexes.sql",
          "V9__dead_letter_error_class.sql",
          "V10__scheduled_events.sql",
          "V11__scheduled_due_order.sql");

  /**
   * The opt-in conversion to date-partitioned retention ({@code postbox.date-partitions=true}),
   * under a history of its own, {@code postbox_date_partitions_history}: turning the option on is a
   * migration of its own, applied once, whatever version Postbox's own schema is at.
   */
  static final List<String> DATE_PARTITION_FILES = List.of("V1__date_partitions.sql");

  private Migrations() {}

  /** Migrates to the latest version and returns the dialect found. */
  public static Dialect migrate(DataSource dataSource) {
    Dialect dialect = dialect(dataSource);
    flyway(dataSource, dialect.migrationLocation(), FILES, "postbox_schema_history", true);
    return dialect;
  }

  /**
   * Converts the outbox and the inbox to date-partitioned tables ({@code
   * retention.DatePartitions}), unless they are already; after {@link #migrate}.
   *
   * @throws IllegalStateException the database cannot partition by date (only PostgreSQL can)
   */
  public static void partitionByDate(DataSource dataSource) {
    Dialect dialect = dialect(dataSource);
    if (!dialect.partitionsByDate()) {
      throw new IllegalStateException(
          "postbox.date-partitions=true needs PostgreSQL; this database ("
              + dialect.name().toLowerCase(java.util.Locale.ROOT)
              + ") keeps retention by batched DELETEs: remove the setting");
    }
    refuseWhileOthersRun(dataSource);
    flyway(
        dataSource,
        dialect.migrationLocation() + "-date-partitions",
        DATE_PARTITION_FILES,
        "postbox_date_partitions_history",
        // V1 was edited for V10's statuses and indexes (a conversion now runs after V10): one
        // applied with the older text must not fail validation. The conversion runs once.
        false);
  }

  /**
   * The conversion changes the inbox's key and statements under running instances' feet: one that
   * started before it would still delete and insert as for the plain tables. So it refuses while
   * another relay instance's heartbeat is fresh (a minute); instances without a relay are the
   * operator's to stop (docs/retention.md).
   */
  private static void refuseWhileOthersRun(DataSource dataSource) {
    try (Connection c = dataSource.getConnection();
        java.sql.PreparedStatement done =
            c.prepareStatement("SELECT relkind FROM pg_class WHERE oid = to_regclass(?)");
        java.sql.PreparedStatement live =
            c.prepareStatement(
                "SELECT COUNT(*) FROM postbox_relay_instance"
                    + " WHERE heartbeat_at > clock_timestamp() - INTERVAL '1 minute'")) {
      done.setString(1, "postbox_inbox");
      try (java.sql.ResultSet rs = done.executeQuery()) {
        if (rs.next() && "p".equals(rs.getString(1))) {
          return; // converted already: Flyway has nothing to do
        }
      }
      try (java.sql.ResultSet rs = live.executeQuery()) {
        rs.next();
        if (rs.getLong(1) > 0) {
          throw new IllegalStateException(
              "postbox.date-partitions=true converts the outbox and inbox tables, but "
                  + rs.getLong(1)
                  + " other Postbox instance(s) are running on them (postbox_relay_instance);"
                  + " stop every instance, then start one with the setting");
        }
      }
    } catch (SQLException e) {
      throw new DataAccessException(e);
    }
  }

  private static void flyway(
      DataSource dataSource,
      String location,
      List<String> files,
      String history,
      boolean validate) {
    Flyway.configure()
        .validateOnMigrate(validate)
        .dataSource(dataSource)
        .resourceProvider(new ListedResources(location, files))
        // Nothing to scan: the migrations are listed, and scanning logs errors in app servers.
        // (Flyway's constructor still scans classpath:db/callback for Java callbacks, whatever the
        // configuration; this jar's empty db/callback/flyway.location is the marker that lets it
        // resolve that folder in IBM's class loaders instead of logging an error at every start.)
        .locations(new String[0])
        .callbackLocations(new String[0])
        .table(history)
        .baselineOnMigrate(true)
        .baselineVersion("0")
        .load()
        .migrate();
  }

  /** The dialect of a data source's database. */
  public static Dialect dialect(DataSource dataSource) {
    try (Connection c = dataSource.getConnection()) {
      return Dialect.of(c);
    } catch (SQLException e) {
      throw new DataAccessException(e);
    }
  }

  /** Serves the listed migration files of one location from this jar's class loader. */
  private record ListedResources(String location, List<String> files) implements ResourceProvider {
    @Override
    public LoadableResource getResource(String name) {
      return files.contains(name) ? resource(name) : null;
    }

    @Override
    public Collection<LoadableResource> getResources(String prefix, String[] suffixes) {
      List<LoadableResource> out = new ArrayList<>();
      for (String file : files) {
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
      String path = location.substring("classpath:".length()) + "/" + file;
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
