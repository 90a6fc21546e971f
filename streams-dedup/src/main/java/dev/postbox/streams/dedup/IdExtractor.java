package dev.postbox.streams.dedup;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.streams.processor.api.Record;

/**
 * Finds a record's event id. Returns {@code null} (never blank) when the record has none, so the
 * processor can send it to the error path with a reason.
 */
@FunctionalInterface
public interface IdExtractor {

  /** The event id, or {@code null} when the record has none. */
  String extract(Record<byte[], byte[]> record);

  /** The CloudEvents Kafka binding's {@code ce_id} header: the default. */
  static IdExtractor ceIdHeader() {
    return header("ce_id");
  }

  /** A header's UTF-8 value. */
  static IdExtractor header(String name) {
    return r -> {
      Header h = r.headers().lastHeader(name);
      return h == null || h.value() == null
          ? null
          : blankToNull(new String(h.value(), StandardCharsets.UTF_8));
    };
  }

  /** The record key as UTF-8. */
  static IdExtractor key() {
    return r -> r.key() == null ? null : blankToNull(new String(r.key(), StandardCharsets.UTF_8));
  }

  /** A top-level field of a JSON value, e.g. {@code eventId}. Non-JSON values have no id. */
  static IdExtractor jsonField(String field) {
    ObjectMapper json = new ObjectMapper();
    return r -> {
      if (r.value() == null) {
        return null;
      }
      try {
        JsonNode node = json.readTree(r.value());
        JsonNode id = node == null ? null : node.get(field);
        return id == null || id.isNull() || id.isContainerNode() ? null : blankToNull(id.asText());
      } catch (IOException notJson) {
        return null;
      }
    };
  }

  /**
   * Parses a configuration value: {@code header:<name>}, {@code key}, or {@code json:<field>};
   * {@code ce_id} is short for {@code header:ce_id}.
   *
   * @throws IllegalArgumentException for anything else
   */
  static IdExtractor parse(String spec) {
    if (spec.equals("ce_id")) {
      return ceIdHeader();
    }
    if (spec.equals("key")) {
      return key();
    }
    if (spec.startsWith("header:") && spec.length() > 7) {
      return header(spec.substring(7));
    }
    if (spec.startsWith("json:") && spec.length() > 5) {
      return jsonField(spec.substring(5));
    }
    throw new IllegalArgumentException(
        "id source '" + spec + "' must be ce_id, key, header:<name> or json:<field>");
  }

  private static String blankToNull(String s) {
    return s.isBlank() ? null : s;
  }
}
