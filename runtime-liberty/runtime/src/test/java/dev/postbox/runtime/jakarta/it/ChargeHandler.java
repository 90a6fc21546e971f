package dev.postbox.runtime.jakarta.it;

import dev.postbox.runtime.jakarta.EventHandler;
import dev.postbox.runtime.jakarta.Handles;
import dev.postbox.spi.Envelope;
import jakarta.annotation.Resource;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.transaction.Synchronization;
import jakarta.transaction.TransactionSynchronizationRegistry;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import javax.sql.DataSource;

/**
 * The inbox handler of LibertyOutboxIT: one charge row per event, through the JTA data source, in
 * the inbox's transaction. An event whose payload is "die" halts the JVM right after the commit,
 * before the ack, as a kill -9 would.
 */
@ApplicationScoped
@Handles(destination = "${it.inbox.topic}", group = "charges", types = "OrderCaptured")
public class ChargeHandler implements EventHandler {

  @Resource(lookup = "jdbc/postbox")
  DataSource dataSource;

  @Resource TransactionSynchronizationRegistry registry;

  @Override
  public void handle(Envelope event) throws Exception {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("INSERT INTO it_charge (event_id) VALUES (?)")) {
      ps.setString(1, event.id());
      ps.executeUpdate();
    }
    if ("die".equals(new String(event.payload(), StandardCharsets.UTF_8))) {
      registry.registerInterposedSynchronization(
          new Synchronization() {
            @Override
            public void beforeCompletion() {}

            @Override
            public void afterCompletion(int status) {
              System.out.println("IT-INBOX-COMMITTED " + event.id() + " status " + status);
              System.out.flush();
              Runtime.getRuntime().halt(137);
            }
          });
    }
  }
}
