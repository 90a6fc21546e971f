package dev.postbox.runtime.inbox;

import dev.postbox.runtime.testing.TestDatabase;

/** The inbox contract on H2, in deferred mode. */
class H2DeferredInboxIT extends InboxContract {
  @Override
  protected TestDatabase.Kind kind() {
    return TestDatabase.Kind.H2;
  }

  @Override
  protected boolean deferred() {
    return true;
  }
}
