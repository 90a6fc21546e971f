package dev.postbox.spi;

import java.util.Map;

/**
 * Makes brokers of one kind. Adapters register an implementation with {@link
 * java.util.ServiceLoader} in {@code META-INF/services/dev.postbox.spi.BrokerProvider}; {@link
 * Brokers} selects one by {@link #name()}.
 */
public interface BrokerProvider {

  /** The unique, lower-case name users select this provider by, e.g. {@code kafka}. */
  String name();

  /**
   * Validates the configuration and connects. Fails fast: an unknown key, a missing required key or
   * an invalid value is reported before any connection is made.
   *
   * @param config the adapter's keys without any outer prefix; never {@code null}
   * @throws ConfigException a key is unknown, missing or invalid; the message names it
   */
  Broker open(Map<String, String> config);
}
