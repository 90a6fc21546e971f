package dev.postbox.spi;

import java.time.Duration;
import java.util.Objects;

/**
 * What a broker can do. The runtime adapts to these instead of asking which broker it has, and the
 * conformance kit skips the checks a broker does not claim.
 *
 * @param perKeyOrdering envelopes with equal {@link Envelope#key() keys} reach a consumer group in
 *     publish order (Kafka partitions, JMS message groups, SQS FIFO message groups)
 * @param nativeDeduplication the broker itself drops a republish of the same event id within {@link
 *     #deduplicationWindow()} (SQS FIFO, Artemis duplicate detection)
 * @param deduplicationWindow how long native deduplication remembers an id; {@link Duration#ZERO}
 *     without native deduplication, never {@code null}
 * @param delayedRedelivery {@link Delivery#nack(Duration)} honours its delay; without it a nack
 *     redelivers as soon as the broker can
 * @param maxNackDelay the longest delay a nack accepts; never {@code null}
 * @param maxMessageBytes the largest payload, in bytes, that {@link Publisher#publish} accepts;
 *     larger payloads fail with {@link PermanentBrokerException}
 * @param wireRules the broker's own rules for destinations and envelopes, beyond {@link
 *     EventRules}; {@link WireRules#NONE} when it has none, never {@code null}
 */
public record Capabilities(
    boolean perKeyOrdering,
    boolean nativeDeduplication,
    Duration deduplicationWindow,
    boolean delayedRedelivery,
    Duration maxNackDelay,
    int maxMessageBytes,
    WireRules wireRules) {

  public Capabilities {
    Objects.requireNonNull(deduplicationWindow, "deduplicationWindow");
    Objects.requireNonNull(wireRules, "wireRules");
    Objects.requireNonNull(maxNackDelay, "maxNackDelay");
    if (maxMessageBytes <= 0) {
      throw new IllegalArgumentException("maxMessageBytes must be positive: " + maxMessageBytes);
    }
    if (nativeDeduplication == deduplicationWindow.isZero()) {
      throw new IllegalArgumentException(
          "deduplicationWindow must be positive exactly when nativeDeduplication is on");
    }
  }

  /** Capabilities without wire rules of their own ({@link WireRules#NONE}). */
  public Capabilities(
      boolean perKeyOrdering,
      boolean nativeDeduplication,
      Duration deduplicationWindow,
      boolean delayedRedelivery,
      Duration maxNackDelay,
      int maxMessageBytes) {
    this(
        perKeyOrdering,
        nativeDeduplication,
        deduplicationWindow,
        delayedRedelivery,
        maxNackDelay,
        maxMessageBytes,
        WireRules.NONE);
  }

  /**
   * The one check of an event for this broker, before anything is sent or committed: the
   * destination's name ({@link EventRules#checkDestination}), the payload against {@link
   * #maxMessageBytes()}, then the broker's {@link #wireRules()}. The envelope itself already keeps
   * {@link EventRules}. The runtime calls this when an event is recorded; adapters' publishers call
   * it before they send.
   *
   * @throws InvalidEventException naming the field and the rule broken
   */
  public void check(String destination, Envelope envelope) {
    EventRules.checkDestination(destination);
    if (envelope.payloadSize() > maxMessageBytes) {
      throw new InvalidEventException(
          "payload",
          "is "
              + envelope.payloadSize()
              + " bytes, over this broker's limit of "
              + maxMessageBytes
              + " (max.message.bytes)");
    }
    wireRules.checkDestination(destination);
    wireRules.check(envelope);
  }

  /**
   * A builder that starts from the weakest broker: no ordering, no dedup, no delays, 256 KiB.
   * Adapters switch on what they have, so a component added later defaults to "can't".
   */
  public static Builder builder() {
    return new Builder();
  }

  /** Builds {@link Capabilities}; not thread-safe. */
  public static final class Builder {
    private boolean perKeyOrdering;
    private boolean nativeDeduplication;
    private Duration deduplicationWindow = Duration.ZERO;
    private boolean delayedRedelivery;
    private Duration maxNackDelay = Duration.ZERO;
    private int maxMessageBytes = 256 * 1024;
    private WireRules wireRules = WireRules.NONE;

    private Builder() {}

    public Builder perKeyOrdering(boolean on) {
      this.perKeyOrdering = on;
      return this;
    }

    /** Turns native deduplication on with the given window. */
    public Builder nativeDeduplication(Duration window) {
      this.nativeDeduplication = true;
      this.deduplicationWindow = window;
      return this;
    }

    /** Turns delayed redelivery on, accepting nack delays up to {@code max}. */
    public Builder delayedRedelivery(Duration max) {
      this.delayedRedelivery = true;
      this.maxNackDelay = max;
      return this;
    }

    public Builder maxMessageBytes(int bytes) {
      this.maxMessageBytes = bytes;
      return this;
    }

    /** The broker's own rules for destinations and envelopes. */
    public Builder wireRules(WireRules rules) {
      this.wireRules = rules;
      return this;
    }

    public Capabilities build() {
      return new Capabilities(
          perKeyOrdering,
          nativeDeduplication,
          deduplicationWindow,
          delayedRedelivery,
          maxNackDelay,
          maxMessageBytes,
          wireRules);
    }
  }
}
