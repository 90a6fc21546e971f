package dev.postbox.runtime.jakarta;

import dev.postbox.runtime.CallerTransaction;
import jakarta.annotation.Resource;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.transaction.Status;
import jakarta.transaction.Synchronization;
import jakarta.transaction.TransactionSynchronizationRegistry;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The caller's JTA transaction. Its connection comes from the application's JTA data source, which
 * the server shares within a transaction, so the outbox row commits with the business rows in one
 * local commit; after-commit work runs in an interposed synchronization.
 */
@ApplicationScoped
class JtaCallerTransaction implements CallerTransaction {

  @Resource TransactionSynchronizationRegistry registry;

  @Inject PostboxRuntime runtime;

  @Override
  public void checkActive() {
    if (registry.getTransactionStatus() != Status.STATUS_ACTIVE) {
      throw new IllegalStateException(
          "Outbox.record needs an active JTA transaction (call it from a @Transactional method);"
              + " nothing was recorded");
    }
    Object idempotent = IdempotencyInterceptor.runningTransaction();
    if (idempotent != null && !idempotent.equals(registry.getTransactionKey())) {
      registry.setRollbackOnly();
      throw new IllegalStateException(
          "Outbox.record inside an @Idempotent request must join the request's transaction;"
              + " this one runs in a transaction of its own (REQUIRES_NEW?), so a retry after a"
              + " crash could record the event twice. Nothing was recorded");
    }
  }

  @Override
  public Connection connection() throws SQLException {
    return runtime.dataSource().getConnection();
  }

  @Override
  public void setRollbackOnly() {
    registry.setRollbackOnly();
  }

  @Override
  @SuppressWarnings("unchecked")
  public <T> T perTransaction(Object key, Supplier<T> create, Consumer<T> afterCommit) {
    T value = (T) registry.getResource(key);
    if (value == null) {
      T fresh = create.get();
      registry.putResource(key, fresh);
      registry.registerInterposedSynchronization(
          new Synchronization() {
            @Override
            public void beforeCompletion() {}

            @Override
            public void afterCompletion(int status) {
              if (status == Status.STATUS_COMMITTED) {
                afterCommit.accept(fresh); // cheap: hands off to other threads
              }
            }
          });
      value = fresh;
    }
    return value;
  }
}
