package dev.postbox.benchmarks.app.endpoints;

import jakarta.annotation.Resource;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.transaction.Transactional;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;

/** The order row as {@code Orders.place} writes it, without the event; and the latencies query. */
@ApplicationScoped
public class BenchOrders {

  @Resource(lookup = "jdbc/postbox")
  DataSource dataSource;

  /** Inserts the order in a JTA transaction of its own and returns its id once committed. */
  @Transactional(rollbackOn = SQLException.class)
  public String insert(String customer, long amountCents) throws SQLException {
    String orderId = UUID.randomUUID().toString();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "INSERT INTO pay_order (order_id, customer, amount_cents, idempotency_key,"
                    + " created_at) VALUES (?, ?, ?, ?, ?)")) {
      ps.setString(1, orderId);
      ps.setString(2, customer);
      ps.setLong(3, amountCents);
      ps.setString(4, null);
      ps.setTimestamp(5, Timestamp.from(Instant.now()));
      ps.executeUpdate();
    }
    return orderId;
  }

  /**
   * For orders whose customer starts with the prefix: [order created, notification created] in
   * epoch milliseconds, the latter 0 while the order has no notification yet.
   */
  public List<long[]> latencies(String customerPrefix) throws SQLException {
    List<long[]> out = new ArrayList<>();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT o.created_at, n.created_at FROM pay_order o LEFT JOIN pay_notification n"
                    + " ON n.order_id = o.order_id WHERE o.customer LIKE ?")) {
      ps.setString(1, customerPrefix.replace("%", "").replace("_", "") + "%");
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          Timestamp notified = rs.getTimestamp(2);
          out.add(
              new long[] {rs.getTimestamp(1).getTime(), notified == null ? 0 : notified.getTime()});
        }
      }
    }
    return out;
  }
}
