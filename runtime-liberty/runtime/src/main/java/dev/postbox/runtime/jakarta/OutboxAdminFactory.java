package dev.postbox.runtime.jakarta;

import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Transactions;
import dev.postbox.runtime.relay.OutboxAdmin;

/** Builds an {@link OutboxAdmin} without a running relay (e.g. when the relay is disabled). */
record OutboxAdminFactory(Transactions tx, Dialect dialect, int partitions) {
  OutboxAdmin admin() {
    return OutboxAdmin.create(tx, dialect, partitions);
  }
}
