package dev.postbox.runtime.relay;

import dev.postbox.runtime.testing.TestDatabase;

/** The relay contract on H2. */
class H2RelayIT extends RelayContract {
  @Override
  protected TestDatabase.Kind kind() {
    return TestDatabase.Kind.H2;
  }
}
