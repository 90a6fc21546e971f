package dev.postbox.runtime.inbox;

import dev.postbox.runtime.api.DeadLetter;
import dev.postbox.runtime.common.Fingerprint;
import dev.postbox.spi.Envelope;
import java.time.Instant;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What a dead letter stores, made storable whatever arrived: a poison message must always end as a
 * stored letter, so nothing it carries may make the insert fail. Every text is bounded to its
 * column and has NUL characters escaped (PostgreSQL refuses them); header and metadata maps are
 * bounded as a whole; a time outside what every database stores is kept as text in the metadata;
 * the payload is kept up to {@link #MAX_PAYLOAD_BYTES}, and its full size and SHA-256 are always in
 * the metadata. A letter whose event was cut is marked {@value #TRUNCATED} and is not replayable.
 */
record DeadLetterFields(
    String eventId,
    String key,
    String type,
    String source,
    String subject,
    String contentType,
    Instant eventTime,
    String error,
    Map<String, String> headers,
    byte[] payload,
    Map<String, String> metadata) {

  /** Metadata key present when anything of the event had to be cut or replaced. */
  static final String TRUNCATED = DeadLetter.TRUNCATED;

  static final int MAX_PAYLOAD_BYTES = 1 << 20;

  /**
   * Above a valid envelope's headers (8 KiB in all), so a valid event's letter keeps them whole.
   */
  static final int MAX_MAP_CHARS = 12_000;

  static final int MAX_VALUE_CHARS = 8_192;

  static DeadLetterFields of(
      Envelope e,
      String error,
      Map<String, String> rawHeaders,
      byte[] rawPayload,
      Map<String, String> deliveryMetadata) {
    return of(e, error, rawHeaders, rawPayload, deliveryMetadata, e == null);
  }

  /**
   * @param cutPayload whether the payload may be cut at {@link #MAX_PAYLOAD_BYTES}: for a message
   *     that is not an event, or an oversized one; a valid event keeps its payload whole, so its
   *     letter stays replayable
   */
  static DeadLetterFields of(
      Envelope e,
      String error,
      Map<String, String> rawHeaders,
      byte[] rawPayload,
      Map<String, String> deliveryMetadata,
      boolean cutPayload) {
    Cut cut = new Cut();
    Map<String, String> metadata = new Cut().map(deliveryMetadata); // not part of the event
    byte[] payload = e == null ? (rawPayload == null ? new byte[0] : rawPayload) : e.payload();
    // a minimal letter brings the size and hash of a payload it does not keep
    metadata.putIfAbsent("postbox.payload.bytes", Integer.toString(payload.length));
    metadata.putIfAbsent("postbox.payload.sha256", Fingerprint.of(payload));
    if (cutPayload && payload.length > MAX_PAYLOAD_BYTES) {
      payload = Arrays.copyOf(payload, MAX_PAYLOAD_BYTES);
      cut.cut = true;
    }
    // An envelope's time is within the years 1 to 9999 (EventRules), which every database stores.
    Instant time = e == null ? null : e.time();
    DeadLetterFields f =
        new DeadLetterFields(
            e == null ? null : cut.text(e.id(), 256),
            e == null ? null : cut.text(e.key(), 1024),
            e == null ? null : cut.text(e.type(), 1024),
            e == null ? null : cut.text(e.source(), 1024),
            e == null ? null : cut.text(e.subject(), 1024),
            e == null ? null : cut.text(e.dataContentType(), 1024),
            time,
            cut.text(error, 4000, false),
            cut.map(e == null ? rawHeaders : e.headers()),
            payload,
            metadata);
    if (cut.cut) {
      f.metadata.put(TRUNCATED, "true");
    }
    return f;
  }

  /** Counts whether anything of the event itself was changed. */
  private static final class Cut {
    boolean cut;

    String text(String s, int max) {
      return text(s, max, true);
    }

    String text(String s, int max, boolean partOfEvent) {
      if (s == null) {
        return null;
      }
      String clean = s.indexOf('\0') < 0 ? s : s.replace("\0", "\\u0000");
      if (clean.length() > max) {
        clean = clean.substring(0, max - 3) + "...";
      }
      if (partOfEvent && !clean.equals(s)) {
        cut = true;
      }
      return clean;
    }

    Map<String, String> map(Map<String, String> in) {
      Map<String, String> out = new LinkedHashMap<>();
      if (in == null) {
        return out;
      }
      int chars = 0;
      for (Map.Entry<String, String> entry : in.entrySet()) {
        String k = text(entry.getKey(), 256, false);
        String v = text(entry.getValue(), MAX_VALUE_CHARS, false);
        int size = (k == null ? 4 : k.length()) + (v == null ? 4 : v.length()) + 6;
        if (chars + size > MAX_MAP_CHARS) {
          out.put("postbox.omitted", (in.size() - out.size()) + " more entries");
          cut = true;
          break;
        }
        if (!java.util.Objects.equals(k, entry.getKey())
            || !java.util.Objects.equals(v, entry.getValue())) {
          cut = true;
        }
        out.put(k == null ? "null" : k, v == null ? "" : v);
        chars += size;
      }
      return out;
    }
  }

  /** A text fit for a column of {@code max} characters: NUL escaped, cut with "...". */
  static String storable(String s, int max) {
    return new Cut().text(s, max, false);
  }

  private static final java.util.regex.Pattern ERROR_CLASS =
      java.util.regex.Pattern.compile("^([A-Za-z_$][A-Za-z0-9_$.]*): ");

  /**
   * The Java class name an error starts with ({@code class: message}, as {@link Failures#describe}
   * writes it), or null. The migration that added the column (V9) derives it from stored errors
   * with the same pattern.
   */
  static String errorClass(String error) {
    if (error == null) {
      return null;
    }
    java.util.regex.Matcher m = ERROR_CLASS.matcher(error);
    return m.lookingAt() && m.group(1).length() <= 255 ? m.group(1) : null;
  }
}
