package dev.postbox.runtime.inbox;

import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.StringMapJson;
import dev.postbox.runtime.inbox.PendingEventRepository.Pending;
import dev.postbox.runtime.inbox.PendingEventRepository.Stale;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.InvalidEventException;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;

/**
 * Reads a row of the deferred-mode queue: a runnable {@link Pending} event, or a {@link Stale} row.
 */
final class PendingRows {

  private PendingRows() {}

  /** Adds the current row of {@code rs} to {@code out}, or to {@code stale}. */
  static void read(ResultSet rs, Dialect dialect, List<Pending> out, List<Stale> stale)
      throws SQLException {
    Map<String, String> headers = StringMapJson.read(rs.getString("headers"));
    Map<String, String> metadata = StringMapJson.read(rs.getString("metadata"));
    try {
      out.add(
          new Pending(
              rs.getLong("seq"),
              new Envelope(
                  rs.getString("event_id"),
                  rs.getString("source"),
                  rs.getString("event_type"),
                  rs.getString("subject"),
                  rs.getString("event_key"),
                  dialect.read(rs, "event_time"),
                  rs.getString("content_type"),
                  headers,
                  rs.getBytes("payload")),
              metadata,
              rs.getInt("attempts")));
    } catch (InvalidEventException why) {
      // Queued by an earlier version, before the event rules: never runnable now. It
      // becomes a MALFORMED letter with its fields, and its key's next event goes on.
      Map<String, String> raw = new java.util.LinkedHashMap<>();
      raw.put("ce_id", rs.getString("event_id"));
      raw.put("ce_type", rs.getString("event_type"));
      raw.put("ce_source", rs.getString("source"));
      raw.put("ce_subject", rs.getString("subject"));
      raw.put("ce_partitionkey", rs.getString("event_key"));
      raw.put("ce_datacontenttype", rs.getString("content_type"));
      headers.forEach((k, v) -> raw.put("ce_" + k, v));
      raw.values().removeIf(java.util.Objects::isNull);
      stale.add(
          new Stale(
              rs.getLong("seq"),
              rs.getString("event_id"),
              rs.getString("event_key"),
              raw,
              rs.getBytes("payload"),
              metadata,
              why));
    }
  }
}
