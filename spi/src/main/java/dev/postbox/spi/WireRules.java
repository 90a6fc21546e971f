package dev.postbox.spi;

/**
 * A broker's own rules for what it carries unchanged, beyond {@link EventRules} and {@link
 * Capabilities#maxMessageBytes()}: the destination names it accepts, the characters its headers
 * take (SQS message attributes), the size of the whole encoded message. An adapter declares them in
 * its {@link Capabilities}; the runtime applies them when an event is recorded, in the caller's
 * transaction, so an event the broker would refuse is never committed; the adapter's publisher
 * applies them again before it sends.
 *
 * <p>Implementations are stateless and thread-safe, and throw {@link InvalidEventException} naming
 * the field and the rule. Both methods default to accepting everything.
 */
public interface WireRules {

  /** No rules beyond the envelope's own. */
  WireRules NONE = new WireRules() {};

  /**
   * Checks a destination name.
   *
   * @throws InvalidEventException the broker cannot publish to a destination of that name
   */
  default void checkDestination(String destination) {}

  /**
   * Checks an envelope (already valid by {@link EventRules}) for this broker.
   *
   * @throws InvalidEventException the broker cannot carry it unchanged
   */
  default void check(Envelope envelope) {}
}
