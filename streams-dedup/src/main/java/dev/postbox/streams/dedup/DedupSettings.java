package dev.postbox.streams.dedup;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;

/**
 * What the deduplicator does: where it reads and writes, how it finds ids, and for how long it
 * remembers them.
 *
 * @param window how long an id is remembered after its first sighting
 * @param time whether "now" is the record's timestamp (stream time) or the clock (wall clock)
 * @param purgeInterval how often expired ids are deleted
 */
public record DedupSettings(
    String inputTopic,
    String outputTopic,
    String duplicatesTopic,
    String errorTopic,
    String idSource,
    IdExtractor idExtractor,
    Duration window,
    TimeSemantics time,
    Duration purgeInterval) {

  /** What "now" means for the window. */
  public enum TimeSemantics {
    /**
     * The record timestamps. Deterministic and replayable: reprocessing old data dedups exactly as
     * the first time. Time stands still while no records arrive, so ids also expire only then.
     */
    STREAM_TIME,
    /** The processing clock. Expiry happens on time even with no traffic; replays differ. */
    WALL_CLOCK
  }

  public DedupSettings {
    require(inputTopic, "input.topic");
    require(outputTopic, "output.topic");
    require(errorTopic, "error.topic");
    if (window == null || window.isNegative() || window.isZero()) {
      throw new IllegalArgumentException("dedup.window must be positive");
    }
    if (purgeInterval == null || purgeInterval.isNegative() || purgeInterval.isZero()) {
      throw new IllegalArgumentException("dedup.purge.interval must be positive");
    }
  }

  /** Settings with the defaults: id from {@code ce_id}, stream time, purge every minute. */
  public static DedupSettings of(String input, String output, String errors, Duration window) {
    return new DedupSettings(
        input,
        output,
        null,
        errors,
        "ce_id",
        IdExtractor.ceIdHeader(),
        window,
        TimeSemantics.STREAM_TIME,
        Duration.ofMinutes(1));
  }

  /**
   * Keys of the dedup app's properties file that are ours; every other key goes to Kafka Streams.
   */
  static final Set<String> KEYS =
      Set.of(
          "input.topic",
          "output.topic",
          "duplicates.topic",
          "error.topic",
          "dedup.id.source",
          "dedup.window",
          "dedup.time",
          "dedup.purge.interval");

  /**
   * Reads the {@code dedup.*} and topic keys of a properties file.
   *
   * @throws IllegalArgumentException naming the key that is missing or invalid
   */
  public static DedupSettings from(Properties p) {
    Map<String, String> v = new HashMap<>();
    for (String k : KEYS) {
      if (p.getProperty(k) != null) {
        v.put(k, p.getProperty(k).trim());
      }
    }
    Set<String> unknownDedup = new TreeSet<>();
    for (String k : p.stringPropertyNames()) {
      if (k.startsWith("dedup.") && !KEYS.contains(k)) {
        unknownDedup.add(k);
      }
    }
    if (!unknownDedup.isEmpty()) {
      throw new IllegalArgumentException(
          "unknown dedup key(s) " + unknownDedup + "; known: " + new TreeSet<>(KEYS));
    }
    String idSource = v.getOrDefault("dedup.id.source", "ce_id");
    IdExtractor extractor;
    try {
      extractor = IdExtractor.parse(idSource);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("dedup.id.source: " + e.getMessage(), e);
    }
    String time = v.getOrDefault("dedup.time", "stream-time");
    TimeSemantics semantics =
        switch (time) {
          case "stream-time" -> TimeSemantics.STREAM_TIME;
          case "wall-clock" -> TimeSemantics.WALL_CLOCK;
          default ->
              throw new IllegalArgumentException(
                  "dedup.time '" + time + "' must be stream-time or wall-clock");
        };
    return new DedupSettings(
        need(v, "input.topic"),
        need(v, "output.topic"),
        v.get("duplicates.topic"),
        need(v, "error.topic"),
        idSource,
        extractor,
        duration(v, "dedup.window", null),
        semantics,
        duration(v, "dedup.purge.interval", Duration.ofMinutes(1)));
  }

  private static String need(Map<String, String> v, String key) {
    String value = v.get(key);
    if (value == null || value.isBlank()) {
      throw new IllegalArgumentException(key + " is required");
    }
    return value;
  }

  private static Duration duration(Map<String, String> v, String key, Duration defaultValue) {
    String value = v.get(key);
    if (value == null) {
      if (defaultValue == null) {
        throw new IllegalArgumentException(key + " is required (e.g. PT24H or 24h)");
      }
      return defaultValue;
    }
    try {
      if (value.matches("\\d+(ms|s|m|h|d)")) {
        long n = Long.parseLong(value.replaceAll("\\D", ""));
        return switch (value.replaceAll("\\d", "")) {
          case "ms" -> Duration.ofMillis(n);
          case "s" -> Duration.ofSeconds(n);
          case "m" -> Duration.ofMinutes(n);
          case "h" -> Duration.ofHours(n);
          default -> Duration.ofDays(n);
        };
      }
      return Duration.parse(value);
    } catch (DateTimeParseException e) {
      throw new IllegalArgumentException(
          key + " '" + value + "' must be a duration such as 24h or PT24H", e);
    }
  }

  private static void require(String value, String key) {
    if (value == null || value.isBlank()) {
      throw new IllegalArgumentException(key + " is required");
    }
  }
}
