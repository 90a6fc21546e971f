package dev.postbox.runtime.relay;

import dev.postbox.runtime.db.Dialect;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * PostgreSQL's notification channel for the outbox's cross-instance wake-up ({@link
 * OutboxNotifications}): listening, and the statements of a listening connection. The channel's
 * name is a constant, never input.
 */
final class ChannelRepository {

  private static final String LISTEN = "LISTEN " + Dialect.OUTBOX_CHANNEL;
  private static final String UNLISTEN = "UNLISTEN *";
  private static final String NOTIFY = "SELECT pg_notify('" + Dialect.OUTBOX_CHANNEL + "', ?)";
  private static final String ALIVE = "SELECT 1";

  private ChannelRepository() {}

  static void listen(Connection c) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute(LISTEN);
    }
  }

  /** Stops listening: the connection goes back to a pool. */
  static void unlisten(Connection c) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute(UNLISTEN);
    }
  }

  /** Sends its one parameter, a payload, on the channel. */
  static PreparedStatement notifier(Connection c) throws SQLException {
    return c.prepareStatement(NOTIFY);
  }

  /** A round trip that fails on a connection the network dropped. */
  static PreparedStatement aliveCheck(Connection c) throws SQLException {
    return c.prepareStatement(ALIVE);
  }
}
