package dev.postbox.runtime.inbox;

import java.sql.SQLException;

/** How the inbox reads a failure. */
final class Failures {

  private Failures() {}

  /**
   * Whether the database refused the data itself (SQLState classes 22, 23 and 54, MariaDB's
   * incorrect value errors), as opposed to being unavailable: only then does a minimal letter help.
   */
  static boolean isDataError(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SQLException s) {
        String state = s.getSQLState();
        // 54: a limit of the database's (PostgreSQL's index row size for a long multi-byte key)
        if (state != null
            && (state.startsWith("22") || state.startsWith("23") || state.startsWith("54"))) {
          return true;
        }
        int code = s.getErrorCode();
        if (code == 1366 || code == 1406 || code == 1292 || code == 1264) {
          return true;
        }
      }
    }
    return false;
  }

  /**
   * Whether the database gave up on the transaction for a reason another try may not meet (SQLState
   * class 40: serialization failure, deadlock; lock timeouts of PostgreSQL, MariaDB and H2), as
   * opposed to a failure of the data or of the handler.
   */
  static boolean isTransient(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SQLException s) {
        String state = s.getSQLState();
        if (state != null
            && (state.startsWith("40") || state.equals("55P03") || state.equals("HYT00"))) {
          return true;
        }
        int code = s.getErrorCode();
        if (code == 1205 || code == 1213) {
          return true;
        }
      }
    }
    return false;
  }

  /** The failure's class and message, as stored in attempts and dead letters. */
  static String describe(Throwable failure) {
    return failure.getClass().getName() + ": " + failure.getMessage();
  }
}
