package dev.postbox.runtime;

import dev.postbox.runtime.testing.TestDatabase;

/** Scheduled, cancellable and expiring events on H2. */
class H2ScheduledEventsIT extends ScheduledEventsContract {
  @Override
  protected TestDatabase.Kind kind() {
    return TestDatabase.Kind.H2;
  }
}
