package dev.postbox.runtime.db;

import java.sql.SQLException;

/** A database operation failed; the relay retries on its next round. */
public final class DataAccessException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  public DataAccessException(SQLException cause) {
    super(cause.getMessage(), cause);
  }

  public DataAccessException(String message, Throwable cause) {
    super(message, cause);
  }
}
