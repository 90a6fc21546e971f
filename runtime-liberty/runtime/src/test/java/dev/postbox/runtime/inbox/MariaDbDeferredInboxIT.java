package dev.postbox.runtime.inbox;

import dev.postbox.runtime.testing.TestDatabase;

/** The inbox contract on MARIADB, in deferred mode. */
class MariaDbDeferredInboxIT extends InboxContract {
  @Override
  protected TestDatabase.Kind kind() {
    return TestDatabase.Kind.MARIADB;
  }

  @Override
  protected boolean deferred() {
    return true;
  }
}
