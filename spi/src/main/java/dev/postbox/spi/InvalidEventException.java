package dev.postbox.spi;

/**
 * An event breaks a rule that some stage on its way would enforce: the envelope's own rules (thrown
 * while an {@link Envelope} is built), or the configured broker's {@link WireRules} (thrown by
 * {@link Capabilities#check(String, Envelope)}).
 *
 * <p>It names the field and the rule, so a caller can answer its own client clearly. It is an
 * {@link IllegalArgumentException}: the event is wrong, not the broker or the database, and no
 * retry can help.
 */
public final class InvalidEventException extends IllegalArgumentException {

  private static final long serialVersionUID = 1L;

  private final String field;
  private final String rule;

  /**
   * @param field the attribute that breaks the rule: {@code id}, {@code key}, {@code header
   *     tracestate}, {@code payload}, {@code destination}, ...
   * @param rule what is wrong with it, e.g. "contains the control character U+0000 at index 1"
   */
  public InvalidEventException(String field, String rule) {
    this(field, rule, "envelope " + field + " " + rule);
  }

  /** With a message of its own, where "envelope field rule" reads badly. */
  public InvalidEventException(String field, String rule, String message) {
    super(message);
    this.field = field;
    this.rule = rule;
  }

  /** The attribute that breaks the rule. */
  public String field() {
    return field;
  }

  /** What is wrong with it. */
  public String rule() {
    return rule;
  }
}
