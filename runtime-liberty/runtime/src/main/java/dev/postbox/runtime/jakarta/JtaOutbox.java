package dev.postbox.runtime.jakarta;

import dev.postbox.runtime.api.Outbox;
import dev.postbox.runtime.api.OutboxEvent;
import dev.postbox.runtime.db.DataAccessException;
import dev.postbox.runtime.outbox.OutboxRepository;
import dev.postbox.runtime.outbox.Partitioner;
import jakarta.annotation.Resource;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.transaction.Status;
import jakarta.transaction.Synchronization;
import jakarta.transaction.TransactionSynchronizationRegistry;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.util.HashSet;
import java.util.Set;

/**
 * The {@link Outbox}: inserts the row with JDBC on the application's JTA data source, inside the
 * caller's transaction (the server shares one connection per transaction, so it commits with the
 * business rows in one local commit), and registers an interposed synchronization that, right after
 * the commit, wakes this instance's relay for the touched partitions it holds and announces the
 * others to the instances that hold them (PostgreSQL NOTIFY, sent outside the transaction).
 *
 * <p>JDBC rather than JPA: timestamps are bound by the {@link dev.postbox.runtime.db.Dialect}, in
 * UTC on every database and whatever the JVM's time zone (a JPA {@code OffsetDateTime} in a MariaDB
 * {@code DATETIME} was written in local time, and the relay, reading UTC, saw rows from the
 * future); and the row is written when {@code record} is called, so a constraint or size error
 * surfaces there, in the caller's transaction.
 */
@ApplicationScoped
public class JtaOutbox implements Outbox {

  private static final Object PARTITIONS_KEY = JtaOutbox.class.getName() + ".partitions";

  @Resource private TransactionSynchronizationRegistry registry;

  @Inject private PostboxRuntime runtime;

  @Inject private TraceContext trace;

  @Override
  public String record(OutboxEvent event) {
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
    OutboxEvent withTrace = TraceContext.fromHandledEvent(event);
    if (withTrace == null) {
      try {
        withTrace = trace.addTo(event);
      } catch (jakarta.enterprise.context.ContextNotActiveException noRequest) {
        withTrace = event; // a thread of the application's own, outside any request
      }
    }
    OutboxRepository repository = runtime.repository();
    int partition =
        Partitioner.partition(withTrace.key(), withTrace.eventId(), repository.partitions());
    try (Connection c = runtime.dataSource().getConnection()) {
      repository.insert(c, withTrace, Instant.now());
    } catch (SQLException e) {
      // Whatever the caller does with the exception, this transaction must not commit as if the
      // event had been recorded (PostgreSQL would "commit" its aborted transaction silently).
      registry.setRollbackOnly();
      throw new DataAccessException("the outbox row could not be written: " + e.getMessage(), e);
    }
    wakeAfterCommit(partition);
    return withTrace.eventId();
  }

  /**
   * After commit: wakes this instance's relay for the partitions it holds, and announces the others
   * to the instances that hold them (PostgreSQL; elsewhere they find the rows at their next poll).
   */
  @SuppressWarnings("unchecked")
  private void wakeAfterCommit(int partition) {
    Set<Integer> partitions = (Set<Integer>) registry.getResource(PARTITIONS_KEY);
    if (partitions == null) {
      Set<Integer> touched = new HashSet<>();
      registry.putResource(PARTITIONS_KEY, touched);
      registry.registerInterposedSynchronization(
          new Synchronization() {
            @Override
            public void beforeCompletion() {}

            @Override
            public void afterCompletion(int status) {
              if (status == Status.STATUS_COMMITTED) {
                // cheap: hands off to the relay's and the listener's threads
                runtime.committed(touched);
              }
            }
          });
      partitions = touched;
    }
    partitions.add(partition);
  }
}
