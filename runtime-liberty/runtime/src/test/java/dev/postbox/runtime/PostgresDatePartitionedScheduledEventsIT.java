package dev.postbox.runtime;

import dev.postbox.runtime.testing.TestDatabase;
import java.util.Map;

/**
 * Scheduled events on a date-partitioned outbox (PostgreSQL): the conversion carries V10's statuses
 * and indexes.
 */
class PostgresDatePartitionedScheduledEventsIT extends ScheduledEventsContract {
  @Override
  protected TestDatabase.Kind kind() {
    return TestDatabase.Kind.POSTGRESQL;
  }

  @Override
  protected Map<String, String> more() {
    return Map.of("postbox.date-partitions", "true");
  }
}
