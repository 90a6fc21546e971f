package dev.postbox.payments.payments;

import dev.postbox.payments.Json;
import dev.postbox.payments.orders.OrderCaptured;
import dev.postbox.runtime.api.Handles;
import dev.postbox.runtime.api.JsonEventHandler;
import dev.postbox.runtime.api.Outbox;
import dev.postbox.runtime.api.OutboxEvent;
import dev.postbox.spi.Envelope;
import jakarta.annotation.Resource;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Timestamp;
import java.time.Instant;
import javax.sql.DataSource;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * The payments handler: charges each captured order into the ledger and records {@code
 * PaymentReceived}, all in the inbox's transaction, so a redelivered {@code OrderCaptured} can
 * neither charge twice nor announce a payment twice.
 *
 * <p>The charge cancels the order's scheduled {@code OrderHoldExpired} in the same transaction; if
 * the hold was published first, the order is not charged (it expired: {@link ExpireOrder}).
 *
 * <p>Each charge takes the next number of its customer's account ({@code account_seq}): the order
 * in which a customer's charges were applied, which must be the order the customer placed them in.
 */
@ApplicationScoped
@Handles(destination = "${payments.orders.topic}", group = "payments", types = OrderCaptured.TYPE)
public class ChargeOrder extends JsonEventHandler<OrderCaptured> {

  private static final System.Logger LOG = System.getLogger(ChargeOrder.class.getName());

  @Resource(lookup = "jdbc/postbox")
  DataSource dataSource;

  @Inject Outbox outbox;

  @Inject
  @ConfigProperty(name = "payments.payments.topic")
  String paymentsTopic;

  @Inject
  @ConfigProperty(name = "payments.source")
  String source;

  @Override
  protected void handle(OrderCaptured order, Envelope event) throws Exception {
    try (Connection c = dataSource.getConnection()) {
      // The hold first: a cancel that commits with this charge means it is never published; one
      // that finds it no longer scheduled means it fell due first (ExpireOrder records the
      // expiry), unless this order is charged already: then only the inbox could have stopped
      // this copy, and the ledger must show the double if it did not (this app is not idempotent
      // on its own, so the crash harness sees what the inbox does).
      if (order.holdEventId() != null
          && !outbox.cancel(order.holdEventId())
          && !charged(c, order.orderId())) {
        LOG.log(
            System.Logger.Level.INFO,
            "order " + order.orderId() + " was not charged: its hold expired first");
        return;
      }
      // Prepared only when it runs: Liberty's statement cache calls getMoreResults() when it
      // closes a statement, and MariaDB Connector/J throws (NullPointerException) for one that
      // never ran; an expired order's charge returned before it, and failed on every attempt.
      try (PreparedStatement ps =
          c.prepareStatement(
              "INSERT INTO pay_ledger (order_id, customer, account_seq, amount_cents, event_id,"
                  + " charged_at) VALUES (?, ?, ?, ?, ?, ?)")) {
        ps.setString(1, order.orderId());
        ps.setString(2, order.customer());
        ps.setLong(3, Accounts.next(c, "pay_ledger", order.customer()));
        ps.setLong(4, order.amountCents());
        ps.setString(5, event.id());
        ps.setTimestamp(6, Timestamp.from(Instant.now()));
        ps.executeUpdate();
      }
    }
    outbox.record(
        OutboxEvent.builder()
            .destination(paymentsTopic)
            .key(order.customer())
            .type(PaymentReceived.TYPE)
            .source(source)
            .subject(order.orderId())
            .json(
                Json.write(
                    new PaymentReceived(order.orderId(), order.customer(), order.amountCents())))
            .build());
  }

  private static boolean charged(Connection c, String orderId) throws java.sql.SQLException {
    try (PreparedStatement ps =
        c.prepareStatement("SELECT COUNT(*) FROM pay_ledger WHERE order_id = ?")) {
      ps.setString(1, orderId);
      try (java.sql.ResultSet rs = ps.executeQuery()) {
        return rs.next() && rs.getLong(1) > 0;
      }
    }
  }
}
