package dev.postbox.runtime.relay;

import dev.postbox.runtime.testing.TestDatabase;

/** The relay contract on POSTGRESQL. */
class PostgresRelayIT extends RelayContract {
  @Override
  protected TestDatabase.Kind kind() {
    return TestDatabase.Kind.POSTGRESQL;
  }
}
