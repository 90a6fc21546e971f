package dev.postbox.runtime.jakarta;

import dev.postbox.runtime.outbox.OutboxEvent;
import jakarta.annotation.Resource;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.persistence.EntityManager;
import jakarta.persistence.PersistenceContext;
import jakarta.transaction.Status;
import jakarta.transaction.Synchronization;
import jakarta.transaction.TransactionSynchronizationRegistry;
import java.time.Instant;
import java.util.HashSet;
import java.util.Set;

/**
 * The {@link Outbox}: persists through the {@code postbox} persistence unit (JTA, on the
 * application's data source), and registers an interposed synchronization that wakes the relay for
 * the touched partitions right after the commit.
 */
@ApplicationScoped
public class JtaOutbox implements Outbox {

  private static final Object PARTITIONS_KEY = JtaOutbox.class.getName() + ".partitions";

  @PersistenceContext(unitName = "postbox")
  private EntityManager em;

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
    OutboxEvent withTrace = TraceContext.fromHandledEvent(event);
    if (withTrace == null) {
      try {
        withTrace = trace.addTo(event);
      } catch (jakarta.enterprise.context.ContextNotActiveException noRequest) {
        withTrace = event; // a thread of the application's own, outside any request
      }
    }
    OutboxEventEntity row =
        OutboxEventEntity.pending(withTrace, runtime.partitions(), Instant.now());
    em.persist(row);
    wakeAfterCommit(row.partition());
    return row.eventId();
  }

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
                touched.forEach(runtime::wake); // cheap: hands off to the relay's executor
              }
            }
          });
      partitions = touched;
    }
    partitions.add(partition);
  }
}
