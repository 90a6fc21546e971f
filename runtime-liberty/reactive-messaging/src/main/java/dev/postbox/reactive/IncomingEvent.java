package dev.postbox.reactive;

import dev.postbox.spi.Envelope;

/**
 * Carried by every message of an incoming {@code postbox} channel: the event as the inbox received
 * it (id, type, key, headers, payload). {@code message.unwrap(IncomingEvent.class)} or {@code
 * message.unwrap(Envelope.class)} reaches it.
 *
 * <pre>{@code
 * @Incoming("charges")
 * public CompletionStage<Void> on(Message<String> m) {
 *   Envelope e = m.unwrap(Envelope.class);
 *   ...
 *   return m.ack();
 * }
 * }</pre>
 */
public record IncomingEvent(Envelope envelope) {}
