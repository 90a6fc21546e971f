package dev.postbox.runtime.inbox;

import dev.postbox.runtime.testing.TestDatabase;

/** The inbox contract on MARIADB. */
class MariaDbInboxIT extends InboxContract {
  @Override
  protected TestDatabase.Kind kind() {
    return TestDatabase.Kind.MARIADB;
  }
}
