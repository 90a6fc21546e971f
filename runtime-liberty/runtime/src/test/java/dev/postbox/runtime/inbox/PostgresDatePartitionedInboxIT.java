package dev.postbox.runtime.inbox;

import dev.postbox.runtime.testing.TestDatabase;

/** The inbox contract on POSTGRESQL with a date-partitioned inbox. */
class PostgresDatePartitionedInboxIT extends InboxContract {
  @Override
  protected TestDatabase.Kind kind() {
    return TestDatabase.Kind.POSTGRESQL;
  }

  @Override
  protected boolean datePartitioned() {
    return true;
  }
}
