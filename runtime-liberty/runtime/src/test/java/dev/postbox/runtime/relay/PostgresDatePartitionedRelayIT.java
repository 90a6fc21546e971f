package dev.postbox.runtime.relay;

import dev.postbox.runtime.testing.TestDatabase;

/** The relay contract on POSTGRESQL with a date-partitioned outbox. */
class PostgresDatePartitionedRelayIT extends RelayContract {
  @Override
  protected TestDatabase.Kind kind() {
    return TestDatabase.Kind.POSTGRESQL;
  }

  @Override
  protected boolean datePartitioned() {
    return true;
  }
}
