package dev.postbox.runtime.db;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
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
    dialect.durabilitySettings().read(c, unsafe, weak);
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
}
