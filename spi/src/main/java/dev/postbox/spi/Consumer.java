package dev.postbox.spi;

import java.time.Duration;
import java.util.List;

/**
 * Receives deliveries for one {@link Subscription}.
 *
 * <p><b>Threads.</b> {@link #poll} is called by one thread at a time (the consumer loop).
 * Deliveries may be settled from any thread. {@link #close()} may be called from any thread and
 * makes a blocked {@code poll} return.
 *
 * <p><b>Crashes.</b> A delivery that is not acked before the consumer closes, or before its process
 * dies, is redelivered to a consumer of the same group. Nothing is lost by a crash; at worst, acked
 * deliveries whose ack was not yet durable come back.
 */
public interface Consumer extends AutoCloseable {

  /**
   * Waits up to {@code timeout} for deliveries and returns as soon as it has some.
   *
   * @param maxDeliveries the most to return; at least 1
   * @param timeout how long to wait when nothing is ready; zero or positive
   * @return between 0 and {@code maxDeliveries} deliveries, never {@code null}; empty when none
   *     arrived in time, or when {@link Subscription#maxInFlight()} deliveries are unsettled
   * @throws RetriableBrokerException the broker is unreachable; poll again after a back-off
   * @throws PermanentBrokerException the subscription cannot work, e.g. not authorised
   * @throws IllegalStateException the consumer is closed
   */
  List<Delivery> poll(int maxDeliveries, Duration timeout);

  /** The subscription this consumer serves. */
  Subscription subscription();

  /**
   * Makes recorded acks durable, gives unsettled deliveries back to the broker for redelivery, and
   * releases resources. Idempotent; never throws for a broker error (it is logged), because
   * redelivery makes up for an ack that could not be sent.
   */
  @Override
  void close();
}
