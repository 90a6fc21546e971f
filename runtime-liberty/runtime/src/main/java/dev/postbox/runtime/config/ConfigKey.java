package dev.postbox.runtime.config;

import dev.postbox.spi.BrokerConfig;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * One {@code postbox.*} key, declared once: its name, type, default, range and description. The
 * declaration reads and validates the key ({@link #read}), lists it for the fail-fast checks and
 * the environment lookup ({@link PostboxKeys#ALL}), and writes its row of {@code
 * docs/configuration.md} ({@link ConfigurationDoc}).
 *
 * @param <T> the value's type
 */
public final class ConfigKey<T> {

  /** How a key's value is written. */
  public enum Type {
    BOOLEAN("boolean"),
    INTEGER("integer"),
    DURATION("duration (`500ms`, `30s`, `5m`, `24h`, `7d`, or ISO-8601)"),
    STRING("string"),
    NAMES("comma-separated names");

    private final String text;

    Type(String text) {
      this.text = text;
    }

    /** How the type reads in the docs. */
    public String text() {
      return text;
    }
  }

  private final String name;
  private final Type type;
  private final T defaultValue;
  private final String defaultText;
  private final T min;
  private final T max;
  private final String description;

  private ConfigKey(
      String name,
      Type type,
      T defaultValue,
      String defaultText,
      T min,
      T max,
      String description) {
    if (!name.startsWith("postbox.")) {
      throw new IllegalArgumentException("not a postbox key: " + name);
    }
    this.name = name;
    this.type = type;
    this.defaultValue = defaultValue;
    this.defaultText = defaultText;
    this.min = min;
    this.max = max;
    this.description = description;
  }

  static ConfigKey<Boolean> bool(String name, boolean defaultValue, String description) {
    return new ConfigKey<>(
        name, Type.BOOLEAN, defaultValue, "`" + defaultValue + "`", null, null, description);
  }

  static ConfigKey<Integer> integer(
      String name, int defaultValue, int min, int max, String description) {
    return new ConfigKey<>(
        name, Type.INTEGER, defaultValue, "`" + defaultValue + "`", min, max, description);
  }

  static ConfigKey<Duration> duration(
      String name, Duration defaultValue, Duration min, Duration max, String description) {
    return new ConfigKey<>(
        name,
        Type.DURATION,
        defaultValue,
        "`" + Durations.text(defaultValue) + "`",
        min,
        max,
        description);
  }

  static ConfigKey<String> string(String name, String defaultValue, String description) {
    return new ConfigKey<>(
        name,
        Type.STRING,
        defaultValue,
        defaultValue == null ? "(none)" : "`" + defaultValue + "`",
        null,
        null,
        description);
  }

  static ConfigKey<Set<String>> names(String name, String description) {
    return new ConfigKey<>(name, Type.NAMES, Set.of(), "(none)", null, null, description);
  }

  /**
   * The same key, whose default is computed when it is read (an instance's name, or "off"), as the
   * docs say it.
   */
  ConfigKey<T> defaultIs(String text) {
    return new ConfigKey<>(name, type, defaultValue, text, min, max, description);
  }

  public String name() {
    return name;
  }

  public Type type() {
    return type;
  }

  /** The default as the docs show it. */
  public String defaultText() {
    return defaultText;
  }

  /** The allowed range as the docs show it, or empty. */
  public String rangeText() {
    if (min == null) {
      return "";
    }
    if (type == Type.DURATION) {
      return Durations.text((Duration) min) + " to " + Durations.text((Duration) max);
    }
    return String.format(Locale.ROOT, "%,d to %,d", min, max);
  }

  public String description() {
    return description;
  }

  /**
   * The key's spelling as an environment variable, as MicroProfile Config maps it: every character
   * that is not a letter or digit becomes {@code _}, and the name is upper-cased.
   */
  public String envName() {
    return name.replaceAll("[^A-Za-z0-9]", "_").toUpperCase(Locale.ROOT);
  }

  /** Whether the key is set. */
  public boolean isSet(BrokerConfig c) {
    return c.has(name);
  }

  /** The key's value, its default if unset; a value of the wrong type or range fails, naming it. */
  @SuppressWarnings("unchecked")
  public T read(BrokerConfig c) {
    return switch (type) {
      case BOOLEAN -> (T) Boolean.valueOf(c.bool(name, (Boolean) defaultValue));
      case INTEGER ->
          (T)
              Integer.valueOf(
                  c.integer(name, (Integer) defaultValue, (Integer) min, (Integer) max));
      case DURATION ->
          (T) c.duration(name, (Duration) defaultValue, (Duration) min, (Duration) max);
      case STRING -> (T) c.string(name, (String) defaultValue);
      case NAMES ->
          (T)
              Arrays.stream(c.string(name, "").split(","))
                  .map(String::trim)
                  .filter(s -> !s.isEmpty())
                  .collect(Collectors.toUnmodifiableSet());
    };
  }

  /** The key's value, or {@code computed} when it is unset. */
  public T readOr(BrokerConfig c, T computed) {
    return c.has(name) ? read(c) : computed;
  }

  /** The key's value, or what {@code computed} gives (asked only when the key is unset). */
  public T readOrElse(BrokerConfig c, java.util.function.Supplier<T> computed) {
    return c.has(name) ? read(c) : computed.get();
  }

  /** A required key's value: unset fails, naming it. */
  public String required(BrokerConfig c) {
    return c.required(name);
  }

  @Override
  public String toString() {
    return name;
  }
}
