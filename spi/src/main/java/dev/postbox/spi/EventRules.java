package dev.postbox.spi;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Instant;

/**
 * The rules every event keeps, whatever the broker: what every adapter carries unchanged and every
 * supported database stores unchanged. {@link Envelope} applies them when it is built, so an
 * envelope that exists keeps them; a broker's stricter rules are its {@link WireRules}.
 *
 * <ul>
 *   <li><b>Text</b> (id, source, type, subject, key, content type, header values, destinations): no
 *       control characters (U+0000 to U+001F and U+007F to U+009F: PostgreSQL stores no NUL, SQS
 *       refuses most of them, and none belongs in an identifier) and no unpaired surrogates (they
 *       have no UTF-8 form, so Kafka and every database would turn them into '?').
 *   <li><b>Id and key</b> without a trailing space (MariaDB's comparison ignores it).
 *   <li><b>Time</b> within the years 1 to 9999, the range of every supported database's timestamp
 *       and of CloudEvents' RFC 3339 times.
 *   <li><b>Bytes on the wire</b> are strict UTF-8 when read back ({@link #utf8}): a malformed
 *       sequence is an error, never silently replaced.
 * </ul>
 */
public final class EventRules {

  /** The earliest event time every stage stores unchanged. */
  public static final Instant EARLIEST_TIME = Instant.parse("0001-01-01T00:00:00Z");

  /** The latest event time every stage stores unchanged. */
  public static final Instant LATEST_TIME = Instant.parse("9999-12-31T23:59:59.999999Z");

  /** Longest destination name, the width of the outbox's column. */
  public static final int MAX_DESTINATION_LENGTH = 512;

  private EventRules() {}

  /**
   * Checks a destination's name: not blank, at most {@link #MAX_DESTINATION_LENGTH} characters, and
   * the text rules. A broker's {@link WireRules#checkDestination} may be stricter.
   *
   * @throws InvalidEventException naming the rule
   */
  public static void checkDestination(String destination) {
    if (destination == null || destination.isBlank()) {
      throw new InvalidEventException("destination", "must not be blank");
    }
    if (destination.length() > MAX_DESTINATION_LENGTH) {
      throw new InvalidEventException(
          "destination",
          "is " + destination.length() + " chars, the limit is " + MAX_DESTINATION_LENGTH);
    }
    checkText("destination", destination);
  }

  /**
   * Checks one text value against the text rules.
   *
   * @param field the name to report, e.g. {@code key} or {@code header tracestate}
   * @throws InvalidEventException naming the field, the character and its index
   */
  public static void checkText(String field, String value) {
    int n = value.length();
    for (int i = 0; i < n; i++) {
      char c = value.charAt(i);
      if (c < 0x20 || (c >= 0x7F && c <= 0x9F)) {
        throw new InvalidEventException(
            field, "contains the control character " + codePoint(c) + " at index " + i);
      }
      if (Character.isHighSurrogate(c)) {
        if (i + 1 < n && Character.isLowSurrogate(value.charAt(i + 1))) {
          i++;
          continue;
        }
        throw unpaired(field, c, i);
      }
      if (Character.isLowSurrogate(c)) {
        throw unpaired(field, c, i);
      }
    }
  }

  /**
   * Checks that an id or a key does not end with a space: MariaDB compares text with its trailing
   * spaces cut (a PAD SPACE collation), so {@code "a"} and {@code "a "} would be one event id there
   * (the second skipped as a duplicate) and one key.
   *
   * @throws InvalidEventException naming the field
   */
  public static void checkNoTrailingSpace(String field, String value) {
    if (value != null && !value.isEmpty() && value.charAt(value.length() - 1) == ' ') {
      throw new InvalidEventException(
          field,
          "ends with a space: MariaDB compares text without trailing spaces, so it would be taken"
              + " for the same "
              + field
              + " without them");
    }
  }

  /**
   * Checks an event time.
   *
   * @throws InvalidEventException when it is outside {@link #EARLIEST_TIME} .. {@link #LATEST_TIME}
   */
  public static void checkTime(Instant time) {
    if (time.isBefore(EARLIEST_TIME) || time.isAfter(LATEST_TIME)) {
      throw new InvalidEventException(
          "time", time + " is outside " + EARLIEST_TIME + " .. " + LATEST_TIME);
    }
  }

  /**
   * Decodes bytes read from a broker as strict UTF-8, for an adapter whose wire carries text as
   * bytes (Kafka headers and keys).
   *
   * @param field the name to report
   * @throws InvalidEventException the bytes are not well-formed UTF-8
   */
  public static String utf8(String field, byte[] bytes) {
    try {
      return StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes))
          .toString();
    } catch (CharacterCodingException e) {
      throw new InvalidEventException(field, "is not well-formed UTF-8");
    }
  }

  /** {@code U+001F}, the way Unicode writes a code point. */
  public static String codePoint(int c) {
    return String.format("U+%04X", c);
  }

  private static InvalidEventException unpaired(String field, char c, int i) {
    return new InvalidEventException(
        field, "contains an unpaired surrogate " + codePoint(c) + " at index " + i);
  }
}
