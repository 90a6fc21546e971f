package dev.postbox.runtime.jakarta.it;

import dev.postbox.spi.Envelope;
import jakarta.annotation.Resource;
import jakarta.enterprise.context.ApplicationScoped;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import javax.sql.DataSource;

/**
 * Writes the business effect of the inbox scenario handlers: one it_effect row, through the JTA
 * data source, so it commits or rolls back with the inbox record.
 */
@ApplicationScoped
public class Effects {

  @Resource(name = "jdbc/it")
  DataSource dataSource;

  void write(String subscription, Envelope event, String note) throws Exception {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "INSERT INTO it_effect (subscription, event_id, note) VALUES (?, ?, ?)")) {
      ps.setString(1, subscription);
      ps.setString(2, event.id());
      ps.setString(3, note);
      ps.executeUpdate();
    }
  }

  static String text(Envelope event) {
    return new String(event.payload(), StandardCharsets.UTF_8);
  }
}
