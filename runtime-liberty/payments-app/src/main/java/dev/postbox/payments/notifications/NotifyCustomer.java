package dev.postbox.payments.notifications;

import dev.postbox.payments.payments.Accounts;
import dev.postbox.payments.payments.PaymentReceived;
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
 * The notifications handler: one notification per payment, recorded through the inbox, numbered per
 * customer in the order applied ({@code account_seq}).
 */
@ApplicationScoped
@Handles(
    destination = "${payments.payments.topic}",
    group = "notifications",
    types = PaymentReceived.TYPE)
public class NotifyCustomer extends JsonEventHandler<PaymentReceived> {

  @Resource(lookup = "jdbc/postbox")
  DataSource dataSource;

  @Override
  protected void handle(PaymentReceived payment, Envelope event) throws Exception {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "INSERT INTO pay_notification (order_id, customer, account_seq, event_id, message,"
                    + " created_at) VALUES (?, ?, ?, ?, ?, ?)")) {
      ps.setString(1, payment.orderId());
      ps.setString(2, payment.customer());
      ps.setLong(3, Accounts.next(c, "pay_notification", payment.customer()));
      ps.setString(4, event.id());
      ps.setString(
          5,
          "Dear "
              + payment.customer()
              + ", we received "
              + String.format(java.util.Locale.ROOT, "%.2f", payment.amountCents() / 100.0)
              + " for order "
              + payment.orderId());
      ps.setTimestamp(6, Timestamp.from(Instant.now()));
      ps.executeUpdate();
    }
  }
}
