package dev.postbox.reactive;

import dev.postbox.runtime.api.Schedule;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.eclipse.microprofile.reactive.messaging.Emitter;
import org.eclipse.microprofile.reactive.messaging.Message;

/**
 * What a message on an outgoing {@code postbox} channel says of its event beyond the payload: the
 * key (per-key order), and optionally a type, subject and extra headers, overriding the channel's
 * configuration. A message made with {@link #message} carries it ({@code message.unwrap(
 * OutgoingEvent.class)}); a plain message's event has no key.
 *
 * <pre>{@code
 * OutgoingEvent.key(order.id()).send(emitter, order); // completes once recorded; fails otherwise
 * }</pre>
 *
 * @param key the ordering key, or null for none
 * @param type the event type, or null for the channel's {@code type}
 * @param subject the CloudEvents subject, or null
 *     <p>A scheduled or expiring event carries a {@link Schedule} ({@link #withSchedule}); give it
 *     an id ({@link #withEventId}) to cancel it later with {@code Outbox.cancel}:
 *     <pre>{@code
 * OutgoingEvent.key(order.id()).withEventId(holdId)
 *     .withSchedule(Schedule.after(Duration.ofMinutes(15))).send(emitter, hold);
 * }</pre>
 *
 * @param headers extra headers (CloudEvents extensions); never null
 * @param eventId the event id, or null for a random one
 * @param schedule when it is published and until when, or null for at the commit
 */
public record OutgoingEvent(
    String key,
    String type,
    String subject,
    Map<String, String> headers,
    String eventId,
    Schedule schedule) {

  public OutgoingEvent {
    headers = Map.copyOf(headers);
  }

  public OutgoingEvent(String key, String type, String subject, Map<String, String> headers) {
    this(key, type, subject, headers, null, null);
  }

  /** This event, published at the schedule's due time and never after its expiry. */
  public OutgoingEvent withSchedule(Schedule schedule) {
    return new OutgoingEvent(key, type, subject, headers, eventId, schedule);
  }

  /** This event with this id (to cancel it, or to deduplicate on an id of your own). */
  public OutgoingEvent withEventId(String eventId) {
    return new OutgoingEvent(key, type, subject, headers, eventId, schedule);
  }

  /** An event with this key and the channel's type. */
  public static OutgoingEvent key(String key) {
    return new OutgoingEvent(key, null, null, Map.of());
  }

  public OutgoingEvent withType(String type) {
    return new OutgoingEvent(key, type, subject, headers, eventId, schedule);
  }

  public OutgoingEvent withSubject(String subject) {
    return new OutgoingEvent(key, type, subject, headers, eventId, schedule);
  }

  /**
   * Sends the payload as this event on the emitter's channel.
   *
   * @return completes once the event is recorded in the caller's transaction; fails if it was not
   *     (no transaction, a payload that cannot be encoded, a database error), as {@code
   *     Emitter.send(payload)}'s stage does
   */
  public <T> CompletionStage<Void> send(Emitter<T> emitter, T payload) {
    CompletableFuture<Void> recorded = new CompletableFuture<>();
    emitter.send(
        new EventMessage<>(
            payload,
            this,
            () -> {
              recorded.complete(null);
              return CompletableFuture.completedFuture(null);
            },
            failure -> {
              recorded.completeExceptionally(failure);
              return CompletableFuture.completedFuture(null);
            }));
    return recorded;
  }

  /**
   * A message of this payload that carries this event's facts. Its ack and nack do nothing: prefer
   * {@link #send}, whose stage tells whether the event was recorded.
   */
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
    return new OutgoingEvent(key, type, subject, h, eventId, schedule);
  }
}
