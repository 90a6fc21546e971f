package dev.postbox.runtime.db;

import java.sql.SQLException;

/** Reading a failure's SQL state, through its causes. */
public final class SqlStates {

  private SqlStates() {}

  /**
   * Whether an {@link SQLException} in {@code e}'s cause chain has a SQL state of the class (its
   * first two characters), e.g. {@code "23"} integrity violation, {@code "40"} transaction
   * rollback.
   */
  public static boolean inClass(Throwable e, String sqlStateClass) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SQLException s
          && s.getSQLState() != null
          && s.getSQLState().startsWith(sqlStateClass)) {
        return true;
      }
    }
    return false;
  }
}
