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
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import javax.sql.DataSource;

/** The order row as {@code Orders.place} writes it, without the event; and the latencies. */
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

  /** How many notifications the customers have: an index lookup per customer. */
  public long notified(List<String> customers) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT COUNT(*) FROM pay_notification WHERE customer IN ("
                    + placeholders(customers.size())
                    + ")")) {
      bind(ps, customers);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /**
   * For each notification of the customers: [order created, notification created] in epoch
   * milliseconds. The notifications through their customer index, the orders through their key; no
   * join and no scan, so a harness may ask while the app runs.
   */
  public List<long[]> latencies(List<String> customers) throws SQLException {
    Map<String, Long> notified = new HashMap<>();
    try (Connection c = dataSource.getConnection()) {
      try (PreparedStatement ps =
          c.prepareStatement(
              "SELECT order_id, created_at FROM pay_notification WHERE customer IN ("
                  + placeholders(customers.size())
                  + ")")) {
        bind(ps, customers);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            notified.put(rs.getString(1), rs.getTimestamp(2).getTime());
          }
        }
      }
      List<String> ids = new ArrayList<>(notified.keySet());
      List<long[]> out = new ArrayList<>();
      for (int from = 0; from < ids.size(); from += 500) {
        List<String> chunk = ids.subList(from, Math.min(ids.size(), from + 500));
        try (PreparedStatement ps =
            c.prepareStatement(
                "SELECT order_id, created_at FROM pay_order WHERE order_id IN ("
                    + placeholders(chunk.size())
                    + ")")) {
          bind(ps, chunk);
          try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
              out.add(new long[] {rs.getTimestamp(2).getTime(), notified.get(rs.getString(1))});
            }
          }
        }
      }
      return out;
    }
  }

  private static String placeholders(int n) {
    return String.join(", ", Collections.nCopies(n, "?"));
  }

  private static void bind(PreparedStatement ps, List<String> values) throws SQLException {
    for (int i = 0; i < values.size(); i++) {
      ps.setString(i + 1, values.get(i));
    }
  }
}
