package dev.postbox.spi;

import java.time.Duration;
import java.util.Map;

/**
 * One delivery of an envelope to a consumer. It must be settled exactly once, by {@link #ack()} or
 * {@link #nack(Duration)}; the first settlement wins and later ones are ignored.
 *
 * <p><b>What an ack means.</b> The consumer is done with the envelope, so the broker may forget it:
 * the inbox calls ack only <em>after</em> its transaction committed. How far an ack reaches depends
 * on the broker family:
 *
 * <ul>
 *   <li><b>Per-message brokers</b> (JMS individual acknowledge, SQS {@code DeleteMessage}): the ack
 *       removes exactly this delivery.
 *   <li><b>Log brokers</b> (Kafka): offsets are committed per partition and are cumulative. An
 *       adapter commits only the highest offset below which <em>every</em> delivery is acked, so
 *       acking offset 7 while offset 5 is unacked commits nothing past 5. After a crash, 5 and
 *       everything after it come back: an ack out of order never loses a delivery, it can only
 *       cause redelivery of acked ones, which the inbox skips as duplicates.
 * </ul>
 *
 * <p>An ack is recorded at once and made durable by the adapter soon after, at the latest when the
 * consumer {@link Consumer#close() closes}. An ack that never became durable (crash) means
 * redelivery, never loss.
 *
 * <p>Both methods are thread-safe and never block on the network for long. Settling a delivery that
 * the consumer no longer owns (the consumer closed, or Kafka revoked its partition) is ignored: the
 * broker redelivers it elsewhere.
 */
public interface Delivery {

  /**
   * The envelope as published, byte for byte; never {@code null}.
   *
   * @throws MalformedMessageException the message is not a valid envelope; the exception holds the
   *     raw bytes and the reason, and the delivery can still be settled
   */
  Envelope envelope();

  /**
   * How many times this envelope has been delivered, this time included; 1 on first delivery. Each
   * adapter documents how long the count survives (Kafka: a consumer's life only).
   */
  int attempt();

  /**
   * Broker-specific facts for logs and dead letters, e.g. {@code partition} and {@code offset} for
   * Kafka, {@code messageId} for JMS and SQS; never {@code null}, unmodifiable.
   */
  Map<String, String> metadata();

  /** Done: the broker may forget this delivery. See the class comment for what that means. */
  void ack();

  /**
   * Not done: redeliver this envelope no sooner than {@code delay} from now (if the broker has
   * {@link Capabilities#delayedRedelivery()}; otherwise as soon as it can). Log brokers redeliver
   * the envelope's successors in the same partition too, to keep their order.
   *
   * <p>The runtime's inbox does not use a nack to retry a failed handler: it queues the event in
   * its own table and acknowledges it, so retries and a key's order do not depend on the broker's
   * redelivery. It nacks only a delivery it could commit nothing for (and, while its database
   * cannot be written, keeps its deliveries unsettled and tries them again itself). An adapter must
   * still honour the contract above for any other consumer.
   *
   * @param delay zero or positive, at most {@link Capabilities#maxNackDelay()}; never {@code null}
   * @throws IllegalArgumentException the delay is negative or too long
   */
  void nack(Duration delay);
}
