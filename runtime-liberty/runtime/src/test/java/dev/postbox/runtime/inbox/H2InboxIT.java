package dev.postbox.runtime.inbox;

import dev.postbox.runtime.testing.TestDatabase;

/** The inbox contract on H2. */
class H2InboxIT extends InboxContract {
  @Override
  protected TestDatabase.Kind kind() {
    return TestDatabase.Kind.H2;
  }
}
