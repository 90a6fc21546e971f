package dev.postbox.runtime.jakarta;

import dev.postbox.runtime.db.DataAccessException;
import dev.postbox.runtime.db.Transactions;
import jakarta.transaction.Status;
import jakarta.transaction.SystemException;
import jakarta.transaction.UserTransaction;
import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;

/**
 * Relay transactions through the server's transaction manager: the connection comes from the JTA
 * data source inside a {@link UserTransaction}, as any application work would.
 */
final class JtaTransactions implements Transactions {

  private final UserTransaction ut;
  private final DataSource dataSource;

  JtaTransactions(UserTransaction ut, DataSource dataSource) {
    this.ut = ut;
    this.dataSource = dataSource;
  }

  @Override
  public <T> T inTransaction(Work<T> work) {
    try {
      ut.begin();
    } catch (Exception e) {
      throw new DataAccessException("could not begin a relay transaction", e);
    }
    boolean committed = false;
    try {
      T result;
      try (Connection c = dataSource.getConnection()) {
        result = work.run(c);
      }
      ut.commit();
      committed = true;
      return result;
    } catch (SQLException e) {
      throw new DataAccessException(e);
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new DataAccessException("relay transaction failed: " + e, e);
    } finally {
      if (!committed) {
        rollbackQuietly();
      }
    }
  }

  private void rollbackQuietly() {
    try {
      if (ut.getStatus() != Status.STATUS_NO_TRANSACTION) {
        ut.rollback();
      }
    } catch (SystemException | RuntimeException e) {
      // the transaction manager times it out; nothing was committed
    }
  }
}
