package dev.postbox.runtime.db;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadFeature;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Stores string maps (event headers, broker metadata) as a flat JSON object of strings, so
 * operators can read them in the tables. Jackson's streaming parser reads it strictly: a value that
 * is not a string, a duplicate name, trailing text or a truncated document is an {@link
 * IllegalArgumentException} naming where.
 */
public final class StringMapJson {

  private static final JsonFactory JSON =
      // Without the source in error locations (Jackson's default): the stored headers stay out of
      // exception messages and logs.
      JsonFactory.builder().enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION).build();

  private StringMapJson() {}

  /**
   * A null value (which a third-party adapter's metadata might hold) is written as {@code ""}: what
   * is written can always be read back.
   */
  public static String write(Map<String, String> map) {
    StringWriter out = new StringWriter();
    try (JsonGenerator g = JSON.createGenerator(out)) {
      g.writeStartObject();
      for (Map.Entry<String, String> e : map.entrySet()) {
        g.writeStringField(e.getKey(), e.getValue() == null ? "" : e.getValue());
      }
      g.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e); // a StringWriter does not fail
    }
    return out.toString();
  }

  /**
   * @throws IllegalArgumentException the text is not one JSON object whose values are all strings
   */
  public static Map<String, String> read(String json) {
    Map<String, String> out = new LinkedHashMap<>();
    try (JsonParser p = JSON.createParser(json)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw bad("expected an object", p);
      }
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String name = p.currentName();
        if (p.nextToken() != JsonToken.VALUE_STRING) {
          throw bad("the value of '" + name + "' is not a string", p);
        }
        out.put(name, p.getText());
      }
      if (p.currentToken() != JsonToken.END_OBJECT) {
        throw bad("the object is not closed", p);
      }
      if (p.nextToken() != null) {
        throw bad("text after the object", p);
      }
      return out;
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("bad string map JSON: " + e.getOriginalMessage(), e);
    } catch (IOException e) {
      throw new UncheckedIOException(e); // reading a String does not fail
    }
  }

  private static IllegalArgumentException bad(String why, JsonParser p) {
    return new IllegalArgumentException(
        "bad string map JSON: " + why + " at character " + p.currentLocation().getCharOffset());
  }
}
