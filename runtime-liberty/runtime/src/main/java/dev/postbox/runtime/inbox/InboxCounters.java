package dev.postbox.runtime.inbox;

import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Transactions;

/** The inbox's durable counts, which survive restarts (unlike the in-memory metrics). */
final class InboxCounters {

  private final Transactions tx;
  private final InboxRepository repo;

  public InboxCounters(Transactions tx, Dialect dialect) {
    this.tx = tx;
    this.repo = new InboxRepository(dialect);
  }

  /** Duplicates the subscription's inbox has rejected, over all its instances and lifetimes. */
  public long duplicates(String subscription) {
    return tx.inTransaction(c -> repo.duplicatesCounted(c, subscription));
  }
}
