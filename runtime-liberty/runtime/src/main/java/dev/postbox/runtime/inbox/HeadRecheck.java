package dev.postbox.runtime.inbox;

import dev.postbox.runtime.db.Transactions;
import java.util.Set;

/** The deferred mode's re-check of heads after a commit (see {@link PendingEventRepository}). */
final class HeadRecheck {

  private static final System.Logger LOG = System.getLogger(HeadRecheck.class.getName());

  private HeadRecheck() {}

  /**
   * After a commit, in a transaction of its own: {@link PendingEventRepository#promote} each key
   * whose next event the committing side may have missed. A failure is only logged; the workers'
   * sweep repairs it.
   */
  static void after(
      Transactions tx, PendingEventRepository pending, String subscription, Set<String> keys) {
    if (keys.isEmpty()) {
      return;
    }
    try {
      tx.inTransaction(c -> pending.promoteAll(c, subscription, keys));
    } catch (RuntimeException e) {
      LOG.log(
          System.Logger.Level.WARNING,
          "head re-check failed; the deferred workers' sweep repairs it: " + e);
    }
  }
}
