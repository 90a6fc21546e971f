package dev.postbox.payments.schema;

import jakarta.annotation.Priority;
import jakarta.annotation.Resource;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.enterprise.event.Startup;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/**
 * The app's business tables, created at startup if absent. Portable SQL (H2, PostgreSQL, MariaDB).
 * The ledger deliberately has no unique constraint on the order: only the inbox stands between a
 * redelivered event and a second charge, so a double would show; and none on a customer's {@code
 * account_seq} either, so charges applied out of order or side by side would show too.
 */
@ApplicationScoped
public class PaymentsSchema {

  private static final String[] DDL = {
    "CREATE TABLE IF NOT EXISTS pay_order (order_id VARCHAR(64) PRIMARY KEY,"
        + " customer VARCHAR(200) NOT NULL, amount_cents BIGINT NOT NULL,"
        + " idempotency_key VARCHAR(200) UNIQUE, created_at TIMESTAMP NOT NULL)",
    "CREATE TABLE IF NOT EXISTS pay_ledger (order_id VARCHAR(64) NOT NULL,"
        + " amount_cents BIGINT NOT NULL, event_id VARCHAR(256) NOT NULL,"
        + " charged_at TIMESTAMP NOT NULL)",
    "CREATE TABLE IF NOT EXISTS pay_notification (order_id VARCHAR(64) NOT NULL,"
        + " event_id VARCHAR(256) NOT NULL, message VARCHAR(400) NOT NULL,"
        + " created_at TIMESTAMP NOT NULL)",
    // Per-customer numbering, in the order applied (added to tables of earlier versions too).
    "ALTER TABLE pay_ledger ADD COLUMN IF NOT EXISTS customer VARCHAR(200)",
    "ALTER TABLE pay_ledger ADD COLUMN IF NOT EXISTS account_seq BIGINT",
    "ALTER TABLE pay_notification ADD COLUMN IF NOT EXISTS customer VARCHAR(200)",
    "ALTER TABLE pay_notification ADD COLUMN IF NOT EXISTS account_seq BIGINT",
    "CREATE INDEX IF NOT EXISTS pay_ledger_account ON pay_ledger (customer, account_seq)",
    "CREATE INDEX IF NOT EXISTS pay_notification_account"
        + " ON pay_notification (customer, account_seq)",
    // Orders whose hold expired before they were charged (no unique key: a double would show).
    "CREATE TABLE IF NOT EXISTS pay_expiry (order_id VARCHAR(64) NOT NULL,"
        + " customer VARCHAR(200) NOT NULL, event_id VARCHAR(256) NOT NULL,"
        + " expired_at TIMESTAMP NOT NULL)"
  };

  @Resource(lookup = "jdbc/postbox")
  DataSource dataSource;

  void create(@Observes @Priority(200) Startup startup) throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      c.setAutoCommit(true); // each statement on its own: a lost race rolls back only itself
      for (String ddl : DDL) {
        execute(s, ddl);
      }
    }
  }

  /**
   * Runs one idempotent statement. Instances of a service start together: on PostgreSQL two
   * concurrent {@code CREATE ... IF NOT EXISTS} can collide (a duplicate key in the catalogue) when
   * both see the table absent. The loser's error comes once the winner committed, so running the
   * statement again finds the table there and does nothing.
   */
  private static void execute(Statement s, String ddl) throws SQLException {
    SQLException first = null;
    for (int attempt = 0; attempt < 3; attempt++) {
      try {
        s.execute(ddl);
        return;
      } catch (SQLException e) {
        if (!duplicate(e)) {
          if (first != null) {
            e.addSuppressed(first);
          }
          throw e; // not the race: permissions, syntax, a lost connection
        }
        if (first == null) {
          first = e;
        } else {
          first.addSuppressed(e);
        }
      }
    }
    throw first;
  }

  /** A duplicate key (class 23) or a duplicate table or object (42P07, 42710). */
  private static boolean duplicate(SQLException e) {
    String state = e.getSQLState();
    return state != null
        && (state.startsWith("23") || state.equals("42P07") || state.equals("42710"));
  }
}
