/**
 * The broker SPI: what Postbox needs from a message broker, and nothing broker-specific.
 *
 * <p>An {@link dev.postbox.spi.Envelope} is a CloudEvents-shaped event. A {@link
 * dev.postbox.spi.Broker}, opened by name through {@link dev.postbox.spi.Brokers}, gives a {@link
 * dev.postbox.spi.Publisher} and {@link dev.postbox.spi.Consumer}s; each {@link
 * dev.postbox.spi.Delivery} is settled once with an ack or a nack. Failures are {@link
 * dev.postbox.spi.RetriableBrokerException retriable} or {@link
 * dev.postbox.spi.PermanentBrokerException permanent}.
 *
 * <p>Unless a method says otherwise, parameters and return values are never {@code null}.
 */
package dev.postbox.spi;
