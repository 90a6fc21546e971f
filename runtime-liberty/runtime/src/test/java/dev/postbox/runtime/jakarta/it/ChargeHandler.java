package dev.postbox.runtime.jakarta.it;

import dev.postbox.runtime.api.EventHandler;
import dev.postbox.runtime.api.Handles;
import dev.postbox.spi.Envelope;
import jakarta.annotation.Resource;
import jakarta.enterprise.context.ApplicationScoped;
import java.sql.Connection;
import java.sql.PreparedStatement;
import javax.sql.DataSource;

/**
 * The inbox handler of LibertyOutboxIT: one charge row per event, through the JTA data source, in
 * the inbox's transaction.
 */
@ApplicationScoped
@Handles(destination = "${it.inbox.topic}", group = "charges", types = "OrderCaptured")
public class ChargeHandler implements EventHandler {

  @Resource(name = "jdbc/it")
  DataSource dataSource;

  @Override
  public void handle(Envelope event) throws Exception {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("INSERT INTO it_charge (event_id) VALUES (?)")) {
      ps.setString(1, event.id());
      ps.executeUpdate();
    }
  }
}
