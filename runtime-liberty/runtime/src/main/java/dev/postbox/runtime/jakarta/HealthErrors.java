package dev.postbox.runtime.jakarta;

import java.lang.System.Logger.Level;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;

/**
 * Health checks answer anyone: their data names what is wrong, never the error's text (hosts,
 * users, SQL). Each distinct error gets an id; the server log has the id with the text, once.
 */
final class HealthErrors {

  private static final System.Logger LOG = System.getLogger(HealthErrors.class.getName());

  private static final Map<String, String> IDS =
      new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, String> eldest) {
          return size() > 256;
        }
      };

  private HealthErrors() {}

  /** {@code "error id <id> (details in the server log)"}; logs the detail the first time. */
  static String redact(String check, String detail) {
    String id;
    synchronized (IDS) {
      id = IDS.get(detail);
      if (id == null) {
        id = UUID.randomUUID().toString().substring(0, 8);
        IDS.put(detail, id);
        LOG.log(Level.WARNING, "health check " + check + ", error id " + id + ": " + detail);
      }
    }
    return "error id " + id + " (details in the server log)";
  }

  /** The data with every {@code DOWN: <detail>} value redacted. */
  static Map<String, String> redactDown(String check, Map<String, String> data) {
    Map<String, String> out = new LinkedHashMap<>();
    data.forEach(
        (k, v) ->
            out.put(
                k,
                v != null && v.startsWith("DOWN: ")
                    ? "DOWN, " + redact(check, v.substring(6))
                    : v));
    return out;
  }
}
