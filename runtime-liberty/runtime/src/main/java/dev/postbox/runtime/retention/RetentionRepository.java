package dev.postbox.runtime.retention;

import dev.postbox.runtime.db.Dialect;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Instant;

/** The purge's one statement, parameterised, on the caller's connection. */
final class RetentionRepository {

  private final Dialect dialect;

  RetentionRepository(Dialect dialect) {
    this.dialect = dialect;
  }

  /**
   * Runs one of the dialect's bounded deletes, whose parameters are the cutoff and the batch size.
   */
  int deleteBatch(Connection c, String boundedDelete, Instant cutoff, int batch)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(boundedDelete)) {
      dialect.bind(ps, 1, cutoff);
      ps.setInt(2, batch);
      return ps.executeUpdate();
    }
  }
}
