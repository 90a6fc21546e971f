package dev.postbox.runtime.inbox;

import dev.postbox.runtime.testing.TestDatabase;

/** The inbox contract on POSTGRESQL. */
class PostgresInboxIT extends InboxContract {
  @Override
  protected TestDatabase.Kind kind() {
    return TestDatabase.Kind.POSTGRESQL;
  }
}
