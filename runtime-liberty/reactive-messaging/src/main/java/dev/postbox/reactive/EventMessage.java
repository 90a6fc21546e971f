package dev.postbox.reactive;

import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import java.util.function.Supplier;
import org.eclipse.microprofile.reactive.messaging.Message;

/**
 * A message that carries Postbox's event facts, reached with {@link Message#unwrap}: {@link
 * IncomingEvent} on incoming channels, {@link OutgoingEvent} on messages made with {@link
 * OutgoingEvent#message}.
 */
final class EventMessage<T> implements Message<T> {

  private final T payload;
  private final Object facts;
  private final Supplier<CompletionStage<Void>> ack;
  private final Function<Throwable, CompletionStage<Void>> nack;

  EventMessage(
      T payload,
      Object facts,
      Supplier<CompletionStage<Void>> ack,
      Function<Throwable, CompletionStage<Void>> nack) {
    this.payload = payload;
    this.facts = facts;
    this.ack = ack;
    this.nack = nack;
  }

  @Override
  public T getPayload() {
    return payload;
  }

  @Override
  public Supplier<CompletionStage<Void>> getAck() {
    return ack;
  }

  @Override
  public Function<Throwable, CompletionStage<Void>> getNack() {
    return nack;
  }

  @Override
  public <C> C unwrap(Class<C> type) {
    if (type.isInstance(facts)) {
      return type.cast(facts);
    }
    if (facts instanceof IncomingEvent e && type.isInstance(e.envelope())) {
      return type.cast(e.envelope());
    }
    if (type.isInstance(this)) {
      return type.cast(this);
    }
    throw new IllegalArgumentException("a postbox message does not unwrap to " + type.getName());
  }

  /** The facts of that type the message carries, or null. */
  static <C> C facts(Message<?> m, Class<C> type) {
    try {
      return m.unwrap(type);
    } catch (IllegalArgumentException | ClassCastException e) {
      return null;
    }
  }
}
