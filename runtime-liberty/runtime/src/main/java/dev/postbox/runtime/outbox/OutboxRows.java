package dev.postbox.runtime.outbox;

import java.util.Map;

/** The row encodings other packages (the JPA entity) need, kept in one place. */
public final class OutboxRows {

  private OutboxRows() {}

  /** Headers as the {@code headers} column stores them. */
  public static String headersJson(Map<String, String> headers) {
    return HeadersJson.write(headers);
  }

  /** The {@code headers} column back as a map. */
  public static Map<String, String> headersFromJson(String json) {
    return HeadersJson.read(json);
  }
}
