package dev.postbox.runtime;

import dev.postbox.runtime.testing.TestDatabase;

/** Scheduled, cancellable and expiring events on Postgres. */
class PostgresScheduledEventsIT extends ScheduledEventsContract {
  @Override
  protected TestDatabase.Kind kind() {
    return TestDatabase.Kind.POSTGRESQL;
  }
}
