package dev.postbox.spi;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A delivered message is not a valid {@link Envelope}: a required attribute is missing or invalid,
 * or it was not written by a CloudEvents producer at all. Thrown by {@link Delivery#envelope()}.
 *
 * <p>It carries the raw payload and headers as received, so the caller can dead-letter the message
 * with its reason, then ack it and carry on. Nothing is lost and the consumer never stalls on
 * poison input.
 */
public final class MalformedMessageException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  /** What is wrong, as far as a consumer must tell apart; {@link #reason()} says the rest. */
  public enum Kind {
    /** Not a valid envelope: not a CloudEvent, another version, or an invalid attribute. */
    MALFORMED,
    /** A CloudEvent without an id: it can never be deduplicated. */
    MISSING_ID
  }

  private final Kind kind;
  private final transient byte[] rawPayload;
  private final transient Map<String, String> rawHeaders;

  /**
   * @param reason why the message is not an envelope, e.g. "missing ce_id header"
   * @param rawPayload the body as received; never {@code null}
   * @param rawHeaders the broker headers or properties as text; never {@code null}
   * @param cause the validation error, if any
   */
  public MalformedMessageException(
      String reason, byte[] rawPayload, Map<String, String> rawHeaders, Throwable cause) {
    this(Kind.MALFORMED, reason, rawPayload, rawHeaders, cause);
  }

  /**
   * @param kind what is wrong; never {@code null}
   * @param reason why the message is not an envelope, e.g. "missing ce_id header"
   * @param rawPayload the body as received; never {@code null}
   * @param rawHeaders the broker headers or properties as text; never {@code null}
   * @param cause the validation error, if any
   */
  public MalformedMessageException(
      Kind kind,
      String reason,
      byte[] rawPayload,
      Map<String, String> rawHeaders,
      Throwable cause) {
    super(reason, cause);
    this.kind = java.util.Objects.requireNonNull(kind, "kind");
    this.rawPayload = rawPayload.clone();
    this.rawHeaders = Collections.unmodifiableMap(new LinkedHashMap<>(rawHeaders));
  }

  /** What is wrong. */
  public Kind kind() {
    return kind;
  }

  /** Why the message could not be read. */
  public String reason() {
    return getMessage();
  }

  /** A copy of the body as received. */
  public byte[] rawPayload() {
    return rawPayload.clone();
  }

  /** The headers as received, unmodifiable. */
  public Map<String, String> rawHeaders() {
    return rawHeaders;
  }

  @Override
  public String toString() {
    return "MalformedMessageException["
        + getMessage()
        + ", payloadBytes="
        + rawPayload.length
        + ", headers="
        + rawHeaders.keySet()
        + "]";
  }
}
