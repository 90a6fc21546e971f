package dev.postbox.spi;

/**
 * Broker configuration is unknown, missing or invalid. Thrown at startup, before anything is
 * published, with a message that names the key. Values of secret keys never appear in it.
 */
public final class ConfigException extends IllegalArgumentException {

  private static final long serialVersionUID = 1L;

  private final String key;

  /**
   * @param key the offending key, or the provider name for an unknown provider; never {@code null}
   * @param message what is wrong and what would be right
   */
  public ConfigException(String key, String message) {
    super(message);
    this.key = key;
  }

  /** The key at fault. */
  public String key() {
    return key;
  }
}
