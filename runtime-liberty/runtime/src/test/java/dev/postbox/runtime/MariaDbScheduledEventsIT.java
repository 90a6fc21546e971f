package dev.postbox.runtime;

import dev.postbox.runtime.testing.TestDatabase;

/** Scheduled, cancellable and expiring events on MariaDb. */
class MariaDbScheduledEventsIT extends ScheduledEventsContract {
  @Override
  protected TestDatabase.Kind kind() {
    return TestDatabase.Kind.MARIADB;
  }
}
