package dev.postbox.reactive;

import dev.postbox.runtime.api.DeadLetterReason;
import dev.postbox.runtime.api.UnprocessableEventException;
import dev.postbox.spi.Envelope;
import jakarta.json.bind.Jsonb;
import jakarta.json.bind.JsonbBuilder;
import jakarta.json.bind.JsonbException;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;

/**
 * Payloads between Reactive Messaging and events: bytes as they are, Strings as UTF-8, objects as
 * JSON.
 */
final class Payloads {

  private static volatile Jsonb jsonb;

  private Payloads() {}

  /** An outgoing payload's bytes, and whether they are JSON made here (else the channel's type). */
  record Encoded(byte[] bytes, boolean json) {}

  static Encoded encode(Object payload) {
    if (payload instanceof byte[] b) {
      return new Encoded(b, false);
    }
    if (payload instanceof String s) {
      return new Encoded(s.getBytes(StandardCharsets.UTF_8), false);
    }
    if (payload == null) {
      throw new IllegalArgumentException("a message without a payload cannot be an event");
    }
    return new Encoded(jsonb().toJson(payload).getBytes(StandardCharsets.UTF_8), true);
  }

  /**
   * The payload as the channel's {@code payload} setting asks; a payload that does not decode as
   * the configured class is dead-lettered at once ({@link DeadLetterReason#MALFORMED}).
   */
  static Object decode(Envelope event, String as, ClassLoader loader) {
    switch (as) {
      case "string":
        return new String(event.payload(), StandardCharsets.UTF_8);
      case "bytes":
        return event.payload();
      case "envelope":
        return event;
      default:
        Class<?> type;
        try {
          type = Class.forName(as, false, loader);
        } catch (ClassNotFoundException e) {
          throw new IllegalStateException("payload class " + as + " is not in the application", e);
        }
        try {
          Object decoded = jsonb().fromJson(new ByteArrayInputStream(event.payload()), type);
          if (decoded == null) {
            throw new UnprocessableEventException("payload is JSON null, not a " + as, null);
          }
          return decoded;
        } catch (JsonbException e) {
          throw new UnprocessableEventException(
              "payload of event "
                  + event.id()
                  + " does not decode as "
                  + as
                  + ": "
                  + e.getMessage(),
              e);
        }
    }
  }

  /** Fails at deployment, naming the key, if the channel's payload class is not there. */
  static void checkDecodable(ChannelSettings settings, ClassLoader loader) {
    String as = settings.payload();
    if (as == null || as.equals("string") || as.equals("bytes") || as.equals("envelope")) {
      return;
    }
    try {
      Class.forName(as, false, loader);
    } catch (ClassNotFoundException | LinkageError e) {
      throw new IllegalArgumentException(
          "mp.messaging.incoming."
              + settings.channel()
              + ".payload="
              + as
              + ": no such class in the application (use string, bytes, envelope or a class name)");
    }
  }

  private static Jsonb jsonb() {
    Jsonb j = jsonb;
    if (j == null) {
      synchronized (Payloads.class) {
        if (jsonb == null) {
          jsonb = JsonbBuilder.create();
        }
        j = jsonb;
      }
    }
    return j;
  }
}
