package dev.postbox.payments.reactive;

import jakarta.annotation.Resource;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.transaction.TransactionSynchronizationRegistry;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.eclipse.microprofile.reactive.messaging.Incoming;

/**
 * Test app code only: the {@code @Incoming} method of the channel {@code rm-in} (connector
 * postbox). Each call writes one row to {@code rm_effect} through the app's JTA data source, noting
 * whether a JTA transaction was active: the inbox's, if the connector keeps its promise. Payloads
 * starting {@code flaky-} fail their first two attempts; {@code poison-} ones always fail.
 */
@ApplicationScoped
public class ReactiveConsumer {

  @Resource(lookup = "jdbc/postbox")
  DataSource data;

  @Resource TransactionSynchronizationRegistry transactions;

  private final Map<String, AtomicInteger> attempts = new ConcurrentHashMap<>();

  @Incoming("rm-in")
  public void on(String payload) throws SQLException {
    int attempt = attempts.computeIfAbsent(payload, p -> new AtomicInteger()).incrementAndGet();
    boolean inTransaction = transactions.getTransactionKey() != null;
    try (Connection c = data.getConnection();
        PreparedStatement s =
            c.prepareStatement(
                "INSERT INTO rm_effect (payload, attempt, in_transaction) VALUES (?, ?, ?)")) {
      s.setString(1, payload);
      s.setInt(2, attempt);
      s.setBoolean(3, inTransaction);
      s.executeUpdate();
    }
    if (payload.startsWith("poison-") || (payload.startsWith("flaky-") && attempt <= 2)) {
      throw new IllegalStateException("attempt " + attempt + " of " + payload + " fails");
    }
  }
}
