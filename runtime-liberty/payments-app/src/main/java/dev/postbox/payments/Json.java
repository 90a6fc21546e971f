package dev.postbox.payments;

import jakarta.json.bind.Jsonb;
import jakarta.json.bind.JsonbBuilder;

/** One JSON-B instance for the app (thread-safe, costly to create). */
public final class Json {

  private static final Jsonb JSONB = JsonbBuilder.create();

  private Json() {}

  public static String write(Object value) {
    return JSONB.toJson(value);
  }
}
