package dev.postbox.spi;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.HashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads an adapter's configuration from a plain map and fails fast, naming the key.
 *
 * <p>Every read marks its key as known; {@link #requireNoUnknownKeys()} then rejects anything else,
 * which catches typos such as {@code bootstrap.server}. Adapters read every key first and call it
 * before they connect. Not thread-safe; use it during {@link BrokerProvider#open}.
 *
 * <p>Values of keys that look secret (password, secret, token, credential, jaas) never appear in
 * messages.
 */
public final class BrokerConfig {

  private static final Pattern SECRET_KEY =
      Pattern.compile(".*(password|secret|token|credential|jaas).*", Pattern.CASE_INSENSITIVE);
  private static final Pattern SHORT_DURATION = Pattern.compile("(\\d+)\\s*(ms|s|m|h|d)");

  private final String adapter;
  private final Map<String, String> values;
  private final Set<String> known = new HashSet<>();
  private final Set<String> knownPrefixes = new HashSet<>();

  private BrokerConfig(String adapter, Map<String, String> values) {
    this.adapter = adapter;
    this.values = new TreeMap<>(values);
  }

  /**
   * @param adapter the provider name, for messages
   * @param values the raw configuration; never {@code null}
   */
  public static BrokerConfig of(String adapter, Map<String, String> values) {
    for (Map.Entry<String, String> e : values.entrySet()) {
      if (e.getKey() == null || e.getValue() == null) {
        throw new ConfigException(
            String.valueOf(e.getKey()), adapter + ": null keys and values are not allowed");
      }
    }
    return new BrokerConfig(adapter, values);
  }

  /** Whether the key is set. Marks it known. */
  public boolean has(String key) {
    known.add(key);
    return values.containsKey(key);
  }

  /** The value, trimmed, or empty when unset. Marks the key known. */
  public Optional<String> optional(String key) {
    known.add(key);
    String v = values.get(key);
    if (v == null) {
      return Optional.empty();
    }
    if (v.isBlank()) {
      throw invalid(key, v, "must not be blank (remove the key to use the default)");
    }
    return Optional.of(v.trim());
  }

  /** The value of a required key. */
  public String required(String key) {
    return optional(key)
        .orElseThrow(() -> new ConfigException(key, adapter + ": '" + key + "' is required"));
  }

  /** The value, or the default when unset. */
  public String string(String key, String defaultValue) {
    return optional(key).orElse(defaultValue);
  }

  /** An integer within {@code [min, max]}, or the default when unset. */
  public int integer(String key, int defaultValue, int min, int max) {
    Optional<String> v = optional(key);
    if (v.isEmpty()) {
      return defaultValue;
    }
    int parsed;
    try {
      parsed = Integer.parseInt(v.get());
    } catch (NumberFormatException e) {
      throw invalid(key, v.get(), "must be a whole number");
    }
    if (parsed < min || parsed > max) {
      throw invalid(key, v.get(), "must be between " + min + " and " + max);
    }
    return parsed;
  }

  /** {@code true} or {@code false} (any case), or the default when unset. */
  public boolean bool(String key, boolean defaultValue) {
    Optional<String> v = optional(key);
    if (v.isEmpty()) {
      return defaultValue;
    }
    return switch (v.get().toLowerCase(Locale.ROOT)) {
      case "true" -> true;
      case "false" -> false;
      default -> throw invalid(key, v.get(), "must be true or false");
    };
  }

  /**
   * A duration within {@code [min, max]}: {@code 500ms}, {@code 30s}, {@code 5m}, {@code 1h},
   * {@code 7d}, or ISO-8601 such as {@code PT30S}; the default when unset.
   */
  public Duration duration(String key, Duration defaultValue, Duration min, Duration max) {
    Optional<String> v = optional(key);
    if (v.isEmpty()) {
      return defaultValue;
    }
    Duration parsed =
        parseDuration(v.get())
            .orElseThrow(
                () -> invalid(key, v.get(), "must be a duration such as 500ms, 30s, 5m or PT30S"));
    if (parsed.compareTo(min) < 0 || parsed.compareTo(max) > 0) {
      throw invalid(key, v.get(), "must be between " + min + " and " + max);
    }
    return parsed;
  }

  /** One of the enum's constants, by name in any case, or the default when unset. */
  public <E extends Enum<E>> E choice(String key, Class<E> type, E defaultValue) {
    Optional<String> v = optional(key);
    if (v.isEmpty()) {
      return defaultValue;
    }
    for (E constant : type.getEnumConstants()) {
      if (constant.name().equalsIgnoreCase(v.get().replace('-', '_'))) {
        return constant;
      }
    }
    Set<String> names = new TreeSet<>();
    for (E constant : type.getEnumConstants()) {
      names.add(constant.name().toLowerCase(Locale.ROOT).replace('_', '-'));
    }
    throw invalid(key, v.get(), "must be one of " + names);
  }

  /**
   * Every key that starts with the prefix, with the prefix removed: for pass-through client
   * properties such as {@code kafka.security.protocol}. Marks the whole prefix known.
   */
  public Map<String, String> withPrefix(String prefix) {
    knownPrefixes.add(prefix);
    Map<String, String> found = new TreeMap<>();
    for (Map.Entry<String, String> e : values.entrySet()) {
      if (e.getKey().startsWith(prefix) && e.getKey().length() > prefix.length()) {
        found.put(e.getKey().substring(prefix.length()), e.getValue());
      }
    }
    return found;
  }

  /**
   * Rejects every key that was not read.
   *
   * @throws ConfigException naming the first unknown key and listing all of them
   */
  public void requireNoUnknownKeys() {
    Set<String> unknown = new TreeSet<>();
    for (String key : values.keySet()) {
      if (!known.contains(key) && knownPrefixes.stream().noneMatch(key::startsWith)) {
        unknown.add(key);
      }
    }
    if (!unknown.isEmpty()) {
      Set<String> expected = new TreeSet<>(known);
      knownPrefixes.forEach(p -> expected.add(p + "*"));
      throw new ConfigException(
          unknown.iterator().next(),
          adapter + ": unknown config key(s) " + unknown + "; known keys are " + expected);
    }
  }

  /** An error for an invalid value; the value is left out for secret keys. */
  public ConfigException invalid(String key, String value, String why) {
    String shown = isSecret(key) ? "(hidden)" : "'" + value + "'";
    return new ConfigException(key, adapter + ": '" + key + "' = " + shown + " " + why);
  }

  /** Whether a key's value must never be shown. */
  public static boolean isSecret(String key) {
    return SECRET_KEY.matcher(key).matches();
  }

  static Optional<Duration> parseDuration(String text) {
    String t = text.trim();
    Matcher m = SHORT_DURATION.matcher(t.toLowerCase(Locale.ROOT));
    if (m.matches()) {
      long n = Long.parseLong(m.group(1));
      return Optional.of(
          switch (m.group(2)) {
            case "ms" -> Duration.ofMillis(n);
            case "s" -> Duration.ofSeconds(n);
            case "m" -> Duration.ofMinutes(n);
            case "h" -> Duration.ofHours(n);
            default -> Duration.ofDays(n);
          });
    }
    try {
      return Optional.of(Duration.parse(t));
    } catch (DateTimeParseException e) {
      return Optional.empty();
    }
  }
}
