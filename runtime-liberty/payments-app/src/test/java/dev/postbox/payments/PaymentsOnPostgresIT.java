package dev.postbox.payments;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Switching the database is configuration only: the same WAR, the same server.xml, three variables
 * (db.url, db.driver, db.user) pointing at the local PostgreSQL.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PaymentsOnPostgresIT {

  private static final String ADMIN_URL = "jdbc:postgresql://127.0.0.1:5432/test";
  private final String schema = "payments_it_" + Long.toHexString(System.nanoTime());
  private VariantServer server;

  @BeforeAll
  void start() throws Exception {
    try (Connection c = DriverManager.getConnection(ADMIN_URL, "postgres", "");
        Statement s = c.createStatement()) {
      s.execute("CREATE SCHEMA " + schema); // a name made here, not input
    }
    server =
        new VariantServer(
            "artemis",
            "payments-postgres",
            Map.of(
                "db.url", ADMIN_URL + "?currentSchema=" + schema,
                "db.driver", "org.postgresql.Driver",
                "db.user", "postgres",
                "payments.embedded-artemis", "true",
                "postbox.broker", "artemis",
                "postbox.broker.url", "vm://0"));
    server.start();
  }

  @AfterAll
  void stop() throws Exception {
    if (server != null) {
      server.close();
    }
    try (Connection c = DriverManager.getConnection(ADMIN_URL, "postgres", "");
        Statement s = c.createStatement()) {
      s.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    }
  }

  @Test
  void aHundredOrdersOnPostgresGiveExactlyAHundredChargesAndNotifications() throws Exception {
    // Relative to before: the class's other tests place (and await) orders of their own.
    long before = ledgerRows();
    HundredOrders.placeAndAwait(new PaymentsApi(server.url()));
    assertThat(ledgerRows() - before).as("the charges are in PostgreSQL").isEqualTo(100);
  }

  private long ledgerRows() throws Exception {
    try (Connection c = DriverManager.getConnection(ADMIN_URL, "postgres", "");
        Statement s = c.createStatement();
        var rs = s.executeQuery("SELECT COUNT(*) FROM " + schema + ".pay_ledger")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  @Test
  void inputTheEventCannotCarryIsRefusedWith400NamingTheFieldNot500() {
    EdgeCases.check(new PaymentsApi(server.url()));
  }

  @Test
  void hostileRequestsGetNoServerErrorAndEveryAcceptedOrderIsChargedAndNotifiedOnce()
      throws Exception {
    FuzzedEdge.Report report =
        new FuzzedEdge(server.url())
            .run(Long.getLong("fuzz.seed", System.nanoTime()), Duration.ofSeconds(30));
    assertThat(report.accepted()).as("some orders were accepted").isGreaterThan(20);
    assertThat(report.byStatus()).containsKeys(400, 201);
  }
}
