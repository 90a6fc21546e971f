package dev.postbox.reactive;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.eclipse.microprofile.reactive.messaging.Message;

/**
 * What a message on an outgoing {@code postbox} channel says of its event beyond the payload: the
 * key (per-key order), and optionally a type, subject and extra headers, overriding the channel's
 * configuration. A message made with {@link #message} carries it ({@code message.unwrap(
 * OutgoingEvent.class)}); a plain message's event has no key.
 *
 * <pre>{@code
 * emitter.send(OutgoingEvent.key(order.id()).message(order));
 * }</pre>
 *
 * @param key the ordering key, or null for none
 * @param type the event type, or null for the channel's {@code type}
 * @param subject the CloudEvents subject, or null
 * @param headers extra headers (CloudEvents extensions); never null
 */
public record OutgoingEvent(String key, String type, String subject, Map<String, String> headers) {

  public OutgoingEvent {
    headers = Map.copyOf(headers);
  }

  /** An event with this key and the channel's type. */
  public static OutgoingEvent key(String key) {
    return new OutgoingEvent(key, null, null, Map.of());
  }

  public OutgoingEvent withType(String type) {
    return new OutgoingEvent(key, type, subject, headers);
  }

  public OutgoingEvent withSubject(String subject) {
    return new OutgoingEvent(key, type, subject, headers);
  }

  /** A message of this payload that carries this event's facts and acknowledges nothing further. */
  public <T> Message<T> message(T payload) {
    return new EventMessage<>(
        payload,
        this,
        () -> CompletableFuture.completedFuture(null),
        failure -> CompletableFuture.completedFuture(null));
  }

  public OutgoingEvent withHeader(String name, String value) {
    Map<String, String> h = new LinkedHashMap<>(headers);
    h.put(name, value);
    return new OutgoingEvent(key, type, subject, h);
  }
}
