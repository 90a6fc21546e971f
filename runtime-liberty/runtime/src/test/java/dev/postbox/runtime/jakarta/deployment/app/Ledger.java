package dev.postbox.runtime.jakarta.deployment.app;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.persistence.EntityManager;
import jakarta.persistence.PersistenceContext;

/** What the application has written, for the tests. */
@ApplicationScoped
public class Ledger {

  @PersistenceContext EntityManager em;

  public long orders(String orderId) {
    return em.createQuery("SELECT COUNT(o) FROM PlacedOrder o WHERE o.id = :id", Long.class)
        .setParameter("id", orderId)
        .getSingleResult();
  }

  public long chargesForOrder(String orderId) {
    return em.createQuery("SELECT COUNT(c) FROM Charge c WHERE c.orderId = :id", Long.class)
        .setParameter("id", orderId)
        .getSingleResult();
  }

  /** Postbox's outbox rows of a key, in the same database (its table, read by the test). */
  public long outboxRowsFor(String key) {
    return ((Number)
            em.createNativeQuery("SELECT COUNT(*) FROM postbox_outbox WHERE event_key = ?")
                .setParameter(1, key)
                .getSingleResult())
        .longValue();
  }

  public long chargesForEvent(String eventId) {
    return em.createQuery("SELECT COUNT(c) FROM Charge c WHERE c.eventId = :id", Long.class)
        .setParameter("id", eventId)
        .getSingleResult();
  }
}
