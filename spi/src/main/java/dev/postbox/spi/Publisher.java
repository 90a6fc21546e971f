package dev.postbox.spi;

import java.util.List;

/**
 * Publishes envelopes to named destinations (a Kafka topic, a JMS queue or topic, an SQS queue).
 *
 * <p>Implementations are thread-safe: one publisher serves every relay thread of a broker. A
 * publisher belongs to its {@link Broker} and is closed with it.
 */
public interface Publisher {

  /**
   * Publishes one envelope and blocks until the broker has durably accepted it: replicated by Kafka
   * with {@code acks=all}, persisted by a JMS broker, stored by SQS. When this returns, a broker
   * crash cannot lose the envelope; when it throws, the envelope may or may not have been accepted,
   * so a retry may publish it twice (consumers deduplicate by {@link Envelope#id()}).
   *
   * @param destination the destination's name; never {@code null} or blank
   * @param envelope what to publish; never {@code null}
   * @throws RetriableBrokerException the broker was unreachable or timed out within the adapter's
   *     configured bound; retry later
   * @throws PermanentBrokerException the envelope can never be accepted, e.g. its payload exceeds
   *     {@link Capabilities#maxMessageBytes()} or the destination is forbidden
   * @throws IllegalStateException the broker is closed
   */
  void publish(String destination, Envelope envelope);

  /**
   * Publishes a batch and blocks until every envelope is durably accepted or has failed. Adapters
   * pipeline or batch the sends, which is the point of this method.
   *
   * <p>Envelopes with the same {@link Envelope#key() key} are sent in list order. An adapter stops
   * a key at its first known failure: later envelopes with that key are reported as failed too, not
   * sent, so a retry of the failed ones keeps their order.
   *
   * <p>The default publishes one by one with {@link #publish}, applying that rule.
   *
   * @param destination the destination's name; never {@code null} or blank
   * @param batch the envelopes in order; never {@code null}, may be empty
   * @throws BatchPublishException some envelopes failed; it names which, every other envelope was
   *     accepted
   * @throws IllegalStateException the broker is closed
   */
  default void publishAll(String destination, List<Envelope> batch) {
    KeyedBatch keyed = new KeyedBatch(batch.size());
    for (int i = 0; i < batch.size(); i++) {
      Envelope envelope = batch.get(i);
      if (keyed.heldBack(i, envelope)) {
        continue;
      }
      try {
        publish(destination, envelope);
      } catch (RetriableBrokerException | PermanentBrokerException e) {
        keyed.stop(i, envelope, e);
      }
    }
    keyed.finish();
  }

  /**
   * {@link #publish} for an adapter whose {@link #publishAll} is its native path: the envelope goes
   * as a batch of one, and a failure is thrown as the {@link BrokerException} it was, not wrapped
   * in a {@link BatchPublishException}.
   *
   * @param publisher an adapter's publisher that overrides {@link #publishAll}
   */
  static void publishAsBatchOfOne(Publisher publisher, String destination, Envelope envelope) {
    try {
      publisher.publishAll(destination, List.of(envelope));
    } catch (BatchPublishException e) {
      throw e.failures().get(0);
    }
  }
}
