package dev.postbox.payments.payments;

import dev.postbox.payments.orders.OrderHoldExpired;
import dev.postbox.runtime.api.Handles;
import dev.postbox.runtime.api.JsonEventHandler;
import dev.postbox.spi.Envelope;
import jakarta.annotation.Resource;
import jakarta.enterprise.context.ApplicationScoped;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Timestamp;
import java.time.Instant;
import javax.sql.DataSource;

/**
 * Records an order whose hold expired before it was charged: the hold's event was published, so its
 * charge found the hold no longer scheduled and charged nothing ({@link ChargeOrder}). In the
 * inbox's transaction, so a redelivered hold expires the order once. {@code pay_expiry} has no
 * unique key, so a second expiry would show.
 */
@ApplicationScoped
@Handles(
    destination = "${payments.orders.topic}",
    group = "payments",
    types = OrderHoldExpired.TYPE)
public class ExpireOrder extends JsonEventHandler<OrderHoldExpired> {

  @Resource(lookup = "jdbc/postbox")
  DataSource dataSource;

  @Override
  protected void handle(OrderHoldExpired hold, Envelope event) throws Exception {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "INSERT INTO pay_expiry (order_id, customer, event_id, expired_at)"
                    + " VALUES (?, ?, ?, ?)")) {
      ps.setString(1, hold.orderId());
      ps.setString(2, hold.customer());
      ps.setString(3, event.id());
      ps.setTimestamp(4, Timestamp.from(Instant.now()));
      ps.executeUpdate();
    }
  }
}
