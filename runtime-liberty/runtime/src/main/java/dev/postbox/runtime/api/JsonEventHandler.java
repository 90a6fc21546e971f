package dev.postbox.runtime.api;

import dev.postbox.spi.Envelope;
import jakarta.json.bind.Jsonb;
import jakarta.json.bind.JsonbBuilder;
import jakarta.json.bind.JsonbException;
import java.io.ByteArrayInputStream;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;

/**
 * An {@link EventHandler} for JSON payloads: the payload is decoded with JSON-B into {@code T}
 * before {@link #handle(Object, Envelope)} runs. Subclass it with a concrete type on a CDI bean
 * annotated with {@link Handles}:
 *
 * <pre>{@code
 * @ApplicationScoped
 * @Handles(destination = "orders", group = "payments", types = "OrderCaptured")
 * class ChargeOrder extends JsonEventHandler<OrderCaptured> {
 *   protected void handle(OrderCaptured order, Envelope event) { ... }
 * }
 * }</pre>
 *
 * <p>A payload that does not decode is dead-lettered at once as {@link DeadLetterReason#MALFORMED}
 * with the decoder's message: retrying cannot change the bytes. Events of raw or non-JSON payloads
 * implement {@link EventHandler} directly.
 *
 * @param <T> the payload type; resolved from the subclass's declaration
 */
public abstract class JsonEventHandler<T> implements EventHandler {

  /** Thread-safe, and costly to create: one for all handlers. */
  private static final Jsonb JSONB = JsonbBuilder.create();

  private volatile Type payloadType;

  /** Runs with the decoded payload, inside the inbox transaction (see {@link EventHandler}). */
  protected abstract void handle(T payload, Envelope event) throws Exception;

  @Override
  public void handle(Envelope event) throws Exception {
    handle(decode(event), event);
  }

  /** Decodes the payload, or throws {@link UnprocessableEventException} (MALFORMED). */
  T decode(Envelope event) {
    Type type = payloadType();
    try {
      T payload = JSONB.fromJson(new ByteArrayInputStream(event.payload()), type);
      if (payload == null) {
        throw new UnprocessableEventException("payload is JSON null, not a " + type, null);
      }
      return payload;
    } catch (JsonbException e) {
      throw new UnprocessableEventException(
          "payload of event " + event.id() + " does not decode as " + type + ": " + e.getMessage(),
          e);
    }
  }

  private Type payloadType() {
    Type t = payloadType;
    if (t == null) {
      t = resolvePayloadType(getClass());
      payloadType = t;
    }
    return t;
  }

  /** T as declared by the first subclass that names it (CDI proxies subclass the bean class). */
  static Type resolvePayloadType(Class<?> handlerClass) {
    for (Class<?> c = handlerClass; c != null && c != Object.class; c = c.getSuperclass()) {
      if (c.getSuperclass() == JsonEventHandler.class
          && c.getGenericSuperclass() instanceof ParameterizedType p) {
        Type arg = p.getActualTypeArguments()[0];
        if (arg instanceof Class<?> || arg instanceof ParameterizedType) {
          return arg;
        }
        break;
      }
    }
    throw new IllegalStateException(
        handlerClass.getName()
            + " must extend JsonEventHandler with a concrete payload type, e.g."
            + " JsonEventHandler<OrderCaptured>");
  }
}
