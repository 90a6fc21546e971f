package dev.postbox.runtime.db;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.runtime.testing.TestDatabase;
import java.sql.Connection;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Instances whose own clocks disagree agree on the database's: due times and expiries are written
 * and compared in it.
 */
class DatabaseClockIT {

  @ParameterizedTest
  @EnumSource(TestDatabase.Kind.class)
  void instancesWithSkewedClocksReadTheDatabasesTime(TestDatabase.Kind kind) throws Exception {
    try (TestDatabase db = TestDatabase.create(kind)) {
      Dialect dialect = Migrations.dialect(db.dataSource());
      DatabaseClock ahead =
          DatabaseClock.of(
              Clock.offset(Clock.systemUTC(), Duration.ofHours(14)), db.dataSource(), dialect);
      DatabaseClock behind =
          DatabaseClock.of(
              Clock.offset(Clock.systemUTC(), Duration.ofMinutes(-7)), db.dataSource(), dialect);
      Instant database;
      try (Connection c = db.dataSource().getConnection()) {
        database = dialect.databaseNow(c);
      }
      Instant a = ahead.instant();
      Instant b = behind.instant();
      assertThat(Duration.between(database, a).abs()).isLessThan(Duration.ofMillis(200));
      assertThat(Duration.between(database, b).abs()).isLessThan(Duration.ofMillis(200));
      assertThat(Duration.between(a, b).abs()).isLessThan(Duration.ofMillis(200));
      assertThat(ahead.offsetNanos()).isLessThan(-Duration.ofHours(13).toNanos());
    }
  }
}
