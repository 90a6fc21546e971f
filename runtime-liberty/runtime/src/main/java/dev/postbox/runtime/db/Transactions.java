package dev.postbox.runtime.db;

import java.sql.Connection;
import java.sql.SQLException;

/**
 * Runs work in a database transaction of its own. The plain-Java engine uses {@link #jdbc}; the
 * Jakarta wiring supplies one that uses JTA, so relay work joins the server's transaction manager.
 */
@FunctionalInterface
public interface Transactions {

  /** Work on a connection inside a transaction. */
  @FunctionalInterface
  interface Work<T> {
    T run(Connection c) throws SQLException;
  }

  /**
   * Runs the work and commits, or rolls back if it throws.
   *
   * @throws DataAccessException wrapping any {@link SQLException}
   */
  <T> T inTransaction(Work<T> work);

  /**
   * Local JDBC transactions on connections from the data source, at READ COMMITTED: the relay needs
   * no snapshot, and on InnoDB it avoids gap locks that make claims wait on each other.
   */
  static Transactions jdbc(javax.sql.DataSource dataSource) {
    return new Transactions() {
      @Override
      public <T> T inTransaction(Work<T> work) {
        try (Connection c = dataSource.getConnection()) {
          boolean autoCommit = c.getAutoCommit();
          // Only InnoDB defaults to REPEATABLE READ; elsewhere the default is READ COMMITTED, and
          // changing it costs PostgreSQL two extra round trips per transaction.
          boolean repeatableReadByDefault = Dialect.of(c).defaultsToRepeatableRead();
          int isolation = repeatableReadByDefault ? c.getTransactionIsolation() : -1;
          c.setAutoCommit(false);
          if (repeatableReadByDefault) {
            c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
          }
          try {
            T result = work.run(c);
            c.commit();
            return result;
          } catch (SQLException | RuntimeException | Error e) {
            // an Error too: setAutoCommit(true) below would otherwise commit the half-done work
            rollbackQuietly(c, e);
            throw e;
          } finally {
            if (isolation != -1) {
              c.setTransactionIsolation(isolation);
            }
            c.setAutoCommit(autoCommit);
          }
        } catch (SQLException e) {
          throw new DataAccessException(e);
        }
      }
    };
  }

  private static void rollbackQuietly(Connection c, Throwable cause) {
    try {
      c.rollback();
    } catch (SQLException rollbackFailure) {
      cause.addSuppressed(rollbackFailure);
    }
  }
}
