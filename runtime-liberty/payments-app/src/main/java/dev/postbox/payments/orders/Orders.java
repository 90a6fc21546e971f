package dev.postbox.payments.orders;

import dev.postbox.payments.Json;
import dev.postbox.runtime.api.Outbox;
import dev.postbox.runtime.api.OutboxEvent;
import dev.postbox.runtime.api.Schedule;
import jakarta.annotation.Resource;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.transaction.Transactional;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * Places orders: the order row and its {@code OrderCaptured} event in one JTA transaction, so the
 * event exists if and only if the order does. The event's key is the customer: a customer's orders
 * form one stream, charged in the order they were placed. With it, an {@code OrderHoldExpired}
 * event is scheduled {@code payments.hold} ahead (15 minutes by default), which the charge cancels.
 */
@ApplicationScoped
public class Orders {

  /** A stored order. */
  public record Order(String orderId, String customer, long amountCents, Instant createdAt) {}

  @Resource(lookup = "jdbc/postbox")
  DataSource dataSource;

  @Inject Outbox outbox;

  @Inject
  @ConfigProperty(name = "payments.orders.topic")
  String ordersTopic;

  @Inject
  @ConfigProperty(name = "payments.source")
  String source;

  /** How long an order may wait for its charge before it expires: {@code 15m}, {@code 30s}. */
  @Inject
  @ConfigProperty(name = "payments.hold", defaultValue = "15m")
  String hold;

  /**
   * {@code payments.hold} as a duration: a number and ms, s, m or h, or ISO-8601 ({@code PT15M}).
   */
  Duration hold() {
    return HoldSetting.parse(hold);
  }

  /**
   * Records the order and its event, in the caller's transaction if there is one (an {@code
   * Idempotent} request's), else in one of its own.
   *
   * @return the order, its event's id and JSON payload
   */
  @Transactional(rollbackOn = SQLException.class)
  public Placed place(OrderRequest request) throws SQLException {
    Order order =
        new Order(
            UUID.randomUUID().toString(), request.customer(), request.amountCents(), Instant.now());
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "INSERT INTO pay_order (order_id, customer, amount_cents, idempotency_key,"
                    + " created_at) VALUES (?, ?, ?, ?, ?)")) {
      ps.setString(1, order.orderId());
      ps.setString(2, order.customer());
      ps.setLong(3, order.amountCents());
      ps.setString(4, null); // keys now live in postbox_idempotency (Idempotent)
      ps.setTimestamp(5, Timestamp.from(order.createdAt()));
      ps.executeUpdate();
    }
    // The hold: published if the order is not charged within payments.hold, cancelled by the
    // charge (ChargeOrder); so every order ends charged or expired, never both.
    String holdId =
        outbox.record(
            OutboxEvent.builder()
                .destination(ordersTopic)
                .key(order.orderId())
                .type(OrderHoldExpired.TYPE)
                .source(source)
                .subject(order.orderId())
                .json(
                    Json.write(
                        new OrderHoldExpired(
                            order.orderId(), order.customer(), order.amountCents())))
                .build(),
            Schedule.after(hold()));
    String payload =
        Json.write(
            new OrderCaptured(order.orderId(), order.customer(), order.amountCents(), holdId));
    String eventId =
        outbox.record(
            OutboxEvent.builder()
                .destination(ordersTopic)
                // A customer's events share a key, so they are delivered in the order placed.
                .key(order.customer())
                .type(OrderCaptured.TYPE)
                .source(source)
                .subject(order.orderId())
                .json(payload)
                .build());
    return new Placed(order, eventId, payload);
  }

  /** The result of {@link #place}: the order, its event's id and JSON payload. */
  public record Placed(Order order, String eventId, String payload) {}

  public String ordersTopic() {
    return ordersTopic;
  }

  public String source() {
    return source;
  }

  public Optional<Order> byId(String orderId) throws SQLException {
    return query("SELECT * FROM pay_order WHERE order_id = ?", orderId, 1).stream().findFirst();
  }

  /** The newest orders first. */
  public List<Order> latest(int limit) throws SQLException {
    return query("SELECT * FROM pay_order ORDER BY created_at DESC, order_id", null, limit);
  }

  /** Count and sum of all orders. */
  public long[] totals() throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT COUNT(*), COALESCE(SUM(amount_cents), 0) FROM pay_order");
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      return new long[] {rs.getLong(1), rs.getLong(2)};
    }
  }

  private List<Order> query(String sql, String param, int limit) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      if (param != null) {
        ps.setString(1, param);
      }
      ps.setMaxRows(limit);
      List<Order> out = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(
              new Order(
                  rs.getString("order_id"),
                  rs.getString("customer"),
                  rs.getLong("amount_cents"),
                  rs.getTimestamp("created_at").toInstant()));
        }
      }
      return out;
    }
  }
}
