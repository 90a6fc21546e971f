package dev.postbox.payments;

import dev.postbox.admin.ApiError;
import jakarta.json.JsonException;
import jakarta.json.stream.JsonLocation;
import jakarta.json.stream.JsonParser;
import jakarta.json.stream.JsonParsingException;
import java.io.StringReader;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * Reads a request body that must be one JSON object, strictly, and answers 400 naming what is
 * wrong: not UTF-8, not JSON, not an object, a key that appears twice in any object (JSON-B would
 * take the last one silently), or nesting deeper than {@link #MAX_DEPTH}. It returns the top
 * level's scalar members; nested values are checked and left out.
 */
public final class StrictJson {

  /** Deeper nesting is refused: no request of this API needs more than one level. */
  static final int MAX_DEPTH = 32;

  /** A top-level member that is an object or an array. */
  public static final Object NESTED = new Object();

  private StrictJson() {}

  /**
   * The top-level members: a {@link String}, a {@link BigDecimal}, a {@link Boolean}, {@code null},
   * or {@link #NESTED}.
   *
   * @throws jakarta.ws.rs.WebApplicationException 400 with a JSON message
   */
  public static Map<String, Object> object(byte[] body) {
    if (body.length == 0) {
      throw ApiError.badRequest("a JSON object body is required");
    }
    String text;
    try {
      text =
          StandardCharsets.UTF_8
              .newDecoder()
              .onMalformedInput(CodingErrorAction.REPORT)
              .onUnmappableCharacter(CodingErrorAction.REPORT)
              .decode(ByteBuffer.wrap(body))
              .toString();
    } catch (CharacterCodingException e) {
      throw ApiError.badRequest("the request body is not UTF-8");
    }
    Map<String, Object> top = new LinkedHashMap<>();
    Deque<Set<String>> keys = new ArrayDeque<>(); // one set per open object, null per array
    String pendingKey = null;
    try (JsonParser p = jakarta.json.Json.createParser(new StringReader(text))) {
      if (!p.hasNext() || p.next() != JsonParser.Event.START_OBJECT) {
        throw ApiError.badRequest("the request body must be a JSON object");
      }
      keys.push(new HashSet<>());
      while (p.hasNext()) {
        JsonParser.Event e = p.next();
        int depth = keys.size();
        switch (e) {
          case KEY_NAME -> {
            String key = p.getString();
            if (!keys.peek().add(key)) {
              throw ApiError.badRequest(
                  "the key \"" + ApiError.clip(key) + "\" appears twice in one object");
            }
            pendingKey = depth == 1 ? key : null;
          }
          case START_OBJECT, START_ARRAY -> {
            if (depth >= MAX_DEPTH) {
              throw ApiError.badRequest("the request body is nested deeper than " + MAX_DEPTH);
            }
            if (pendingKey != null) {
              top.put(pendingKey, NESTED);
              pendingKey = null;
            }
            keys.push(e == JsonParser.Event.START_OBJECT ? new HashSet<>() : new NoKeys());
          }
          case END_OBJECT, END_ARRAY -> keys.pop();
          case VALUE_STRING -> take(top, pendingKey, p.getString());
          case VALUE_NUMBER -> take(top, pendingKey, new Number(p.getString()));
          case VALUE_TRUE -> take(top, pendingKey, Boolean.TRUE);
          case VALUE_FALSE -> take(top, pendingKey, Boolean.FALSE);
          case VALUE_NULL -> take(top, pendingKey, null);
          default -> {
            // no other events
          }
        }
        if (e != JsonParser.Event.KEY_NAME) {
          pendingKey = null;
        }
        if (keys.isEmpty() && p.hasNext()) {
          throw ApiError.badRequest("the request body holds more than one JSON value");
        }
      }
    } catch (JsonParsingException e) {
      JsonLocation at = e.getLocation();
      throw ApiError.badRequest(
          "the request body is not valid JSON"
              + (at == null
                  ? ""
                  : " (line " + at.getLineNumber() + ", column " + at.getColumnNumber() + ")"));
    } catch (JsonException | IllegalStateException | java.util.NoSuchElementException e) {
      throw ApiError.badRequest("the request body is not valid JSON");
    }
    return top;
  }

  /**
   * A JSON number as written. It is not converted here: {@code 1e2147483648} overflows {@link
   * BigDecimal}, and a number of more than 1,100 digits makes the JSON-P parser refuse to convert
   * it; {@link #wholeNumber} converts with bounds.
   */
  public record Number(String text) {

    /**
     * The number as a whole number within {@code min..max}, or null when it has a fraction, is out
     * of range or too long to be a sensible value (more than 40 characters).
     */
    public Long wholeNumber(long min, long max) {
      if (text.length() > 40) {
        return null;
      }
      try {
        BigDecimal n = new BigDecimal(text);
        if (n.abs().compareTo(BigDecimal.valueOf(Long.MAX_VALUE)) > 0) {
          return null;
        }
        BigDecimal whole = n.stripTrailingZeros();
        if (whole.scale() > 0) {
          return null;
        }
        long v = whole.longValueExact();
        return v >= min && v <= max ? v : null;
      } catch (NumberFormatException | ArithmeticException e) {
        return null;
      }
    }

    /** Whether it has a fraction, as written (1.5; 150.0 has none). */
    public boolean hasFraction() {
      try {
        return text.length() <= 40 && new BigDecimal(text).stripTrailingZeros().scale() > 0;
      } catch (NumberFormatException e) {
        return false;
      }
    }
  }

  private static void take(Map<String, Object> top, String key, Object value) {
    if (key != null) {
      top.put(key, value);
    }
  }

  /** An array's place on the stack: it has no keys. */
  private static final class NoKeys extends HashSet<String> {
    private static final long serialVersionUID = 1L;
  }
}
