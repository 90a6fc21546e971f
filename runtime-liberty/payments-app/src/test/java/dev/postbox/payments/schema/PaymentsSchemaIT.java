package dev.postbox.payments.schema;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * Instances of one service start together in a rollout: each creates the business tables at the
 * same moment, on PostgreSQL, where two concurrent {@code CREATE TABLE IF NOT EXISTS} can collide
 * (a duplicate key in {@code pg_type}). Every instance must start.
 */
class PaymentsSchemaIT {

  private static final String BASE = "jdbc:postgresql://127.0.0.1:5432/test?user=postgres";

  @Test
  void fourInstancesCreatingTheTablesAtOnceAllStart() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      for (int round = 0; round < 15; round++) {
        String schema = "pay_schema_race_" + round;
        admin("DROP SCHEMA IF EXISTS " + schema + " CASCADE", "CREATE SCHEMA " + schema);
        CyclicBarrier together = new CyclicBarrier(4);
        List<Future<?>> starts = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
          starts.add(
              pool.submit(
                  () -> {
                    PaymentsSchema instance = new PaymentsSchema();
                    org.postgresql.ds.PGSimpleDataSource ds =
                        new org.postgresql.ds.PGSimpleDataSource();
                    ds.setURL(BASE + "&currentSchema=" + schema);
                    instance.dataSource = ds;
                    together.await();
                    instance.create(null);
                    return null;
                  }));
        }
        for (Future<?> start : starts) {
          start.get(1, java.util.concurrent.TimeUnit.MINUTES); // throws if an instance failed
        }
        if (round < 14) {
          admin("DROP SCHEMA " + schema + " CASCADE");
        }
      }
      // pay_order, pay_ledger, pay_notification, pay_expiry
      assertThat(tables()).as("every table of the app, once").isEqualTo(4);
    } finally {
      pool.shutdownNow();
    }
  }

  /** The app's tables in the last round's schema, kept for this count. */
  private static long tables() throws Exception {
    try (Connection c = DriverManager.getConnection(BASE);
        Statement s = c.createStatement();
        java.sql.ResultSet rs =
            s.executeQuery(
                "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema ="
                    + " 'pay_schema_race_14' AND table_name LIKE 'pay\\_%'")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static void admin(String... sql) throws Exception {
    try (Connection c = DriverManager.getConnection(BASE);
        Statement s = c.createStatement()) {
      for (String statement : sql) {
        s.execute(statement);
      }
    }
  }
}
