package dev.postbox.runtime.inbox;

import dev.postbox.runtime.testing.TestDatabase;

/** The inbox contract on POSTGRESQL, in deferred mode. */
class PostgresDeferredInboxIT extends InboxContract {
  @Override
  protected TestDatabase.Kind kind() {
    return TestDatabase.Kind.POSTGRESQL;
  }

  @Override
  protected boolean deferred() {
    return true;
  }
}
