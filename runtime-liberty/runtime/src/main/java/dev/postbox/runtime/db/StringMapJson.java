package dev.postbox.runtime.db;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Stores string maps (event headers, broker metadata) as a flat JSON object of strings, so
 * operators can read them in the tables. Only that shape is written and read, so a small codec
 * does, without a JSON library.
 */
public final class StringMapJson {

  private StringMapJson() {}

  public static String write(Map<String, String> headers) {
    StringBuilder s = new StringBuilder("{");
    for (Map.Entry<String, String> h : headers.entrySet()) {
      if (s.length() > 1) {
        s.append(',');
      }
      quote(s, h.getKey());
      s.append(':');
      quote(s, h.getValue());
    }
    return s.append('}').toString();
  }

  public static Map<String, String> read(String json) {
    Map<String, String> out = new LinkedHashMap<>();
    int[] i = {skip(json, 0)};
    expect(json, i, '{');
    i[0] = skip(json, i[0]);
    if (json.charAt(i[0]) == '}') {
      return out;
    }
    while (true) {
      String key = string(json, i);
      i[0] = skip(json, i[0]);
      expect(json, i, ':');
      i[0] = skip(json, i[0]);
      out.put(key, string(json, i));
      i[0] = skip(json, i[0]);
      char c = json.charAt(i[0]++);
      if (c == '}') {
        return out;
      }
      if (c != ',') {
        throw new IllegalArgumentException("bad headers JSON at " + (i[0] - 1));
      }
      i[0] = skip(json, i[0]);
    }
  }

  private static void quote(StringBuilder s, String v) {
    s.append('"');
    for (int i = 0; i < v.length(); i++) {
      char c = v.charAt(i);
      switch (c) {
        case '"' -> s.append("\\\"");
        case '\\' -> s.append("\\\\");
        case '\n' -> s.append("\\n");
        case '\r' -> s.append("\\r");
        case '\t' -> s.append("\\t");
        default -> {
          if (c < 0x20) {
            s.append(String.format("\\u%04x", (int) c));
          } else {
            s.append(c);
          }
        }
      }
    }
    s.append('"');
  }

  private static String string(String json, int[] i) {
    expect(json, i, '"');
    StringBuilder s = new StringBuilder();
    while (true) {
      char c = json.charAt(i[0]++);
      if (c == '"') {
        return s.toString();
      }
      if (c != '\\') {
        s.append(c);
        continue;
      }
      char e = json.charAt(i[0]++);
      switch (e) {
        case 'n' -> s.append('\n');
        case 'r' -> s.append('\r');
        case 't' -> s.append('\t');
        case 'b' -> s.append('\b');
        case 'f' -> s.append('\f');
        case 'u' -> {
          s.append((char) Integer.parseInt(json.substring(i[0], i[0] + 4), 16));
          i[0] += 4;
        }
        default -> s.append(e);
      }
    }
  }

  private static void expect(String json, int[] i, char c) {
    if (json.charAt(i[0]) != c) {
      throw new IllegalArgumentException("bad headers JSON: expected '" + c + "' at " + i[0]);
    }
    i[0]++;
  }

  private static int skip(String json, int i) {
    while (i < json.length() && Character.isWhitespace(json.charAt(i))) {
      i++;
    }
    return i;
  }
}
