package dev.postbox.reactive;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;

/**
 * One channel's settings, read from MicroProfile Config: {@code
 * mp.messaging.<incoming|outgoing>.<channel>.<attribute>}, else the connector-wide {@code
 * mp.messaging.connector.postbox.<attribute>}, else the default. Declared once, here; a bad value
 * fails the deployment naming the key.
 *
 * @param channel the channel's name
 * @param incoming whether the channel is incoming (the inbox) or outgoing (the outbox)
 * @param destination the topic or queue (default: the channel's name)
 * @param group incoming: the consumer group (default: the channel's name)
 * @param types incoming: the event types taken, empty for all
 * @param payload incoming: how the payload is handed to the method: {@code string} (UTF-8, the
 *     default), {@code bytes}, {@code envelope} (the whole event), or a class name (JSON-B)
 * @param waitForSubscriber incoming: how long an event waits for the channel's method to ask for it
 *     before the attempt fails and is retried (default 30 s)
 * @param ackTimeout incoming: how long an event waits for a method that completes after it returned
 *     (default 60 s)
 * @param type outgoing: the event type (default: the channel's name)
 * @param source outgoing: the CloudEvents source, or null for the runtime's default
 * @param contentType outgoing: the content type of String and byte[] payloads (default {@code
 *     application/json}); other payloads are JSON-B encoded as {@code application/json}
 */
record ChannelSettings(
    String channel,
    boolean incoming,
    String destination,
    String group,
    Set<String> types,
    String payload,
    Duration waitForSubscriber,
    Duration ackTimeout,
    String type,
    String source,
    String contentType) {

  static final String CONNECTOR = "postbox";
  static final String INCOMING = "mp.messaging.incoming.";
  static final String OUTGOING = "mp.messaging.outgoing.";
  private static final String CONNECTOR_WIDE = "mp.messaging.connector." + CONNECTOR + ".";

  /** The incoming channels whose connector is this one, by name; not those disabled. */
  static Set<String> incomingChannels(
      Iterable<String> propertyNames, Function<String, Optional<String>> config) {
    Set<String> out = new TreeSet<>();
    for (String name : propertyNames) {
      if (name.startsWith(INCOMING) && name.endsWith(".connector")) {
        String channel = name.substring(INCOMING.length(), name.length() - ".connector".length());
        boolean disabled =
            config
                .apply(INCOMING + channel + ".enabled")
                .map(String::trim)
                .filter("false"::equalsIgnoreCase)
                .isPresent();
        if (!channel.isEmpty()
            && !disabled
            && config.apply(name).map(String::trim).filter(CONNECTOR::equals).isPresent()) {
          out.add(channel);
        }
      }
    }
    return out;
  }

  static ChannelSettings incoming(String channel, Function<String, Optional<String>> config) {
    Reader r = new Reader(INCOMING + channel + ".", config);
    return new ChannelSettings(
        channel,
        true,
        r.text("destination", channel),
        r.text("group", channel),
        r.list("types"),
        r.text("payload", "string"),
        r.duration("wait-for-subscriber", Duration.ofSeconds(30)),
        r.duration("ack-timeout", Duration.ofSeconds(60)),
        null,
        null,
        null);
  }

  static ChannelSettings outgoing(String channel, Function<String, Optional<String>> config) {
    Reader r = new Reader(OUTGOING + channel + ".", config);
    return new ChannelSettings(
        channel,
        false,
        r.text("destination", channel),
        null,
        Set.of(),
        null,
        null,
        null,
        r.text("type", channel),
        r.text("source", null),
        r.text("content-type", "application/json"));
  }

  /** Reads a channel's attributes, falling back to the connector-wide ones. */
  private record Reader(String prefix, Function<String, Optional<String>> config) {

    Optional<String> value(String attribute) {
      Optional<String> v = config.apply(prefix + attribute).map(String::trim);
      if (v.isEmpty()) {
        v = config.apply(CONNECTOR_WIDE + attribute).map(String::trim);
      }
      return v;
    }

    String key(String attribute) {
      return prefix + attribute;
    }

    String text(String attribute, String fallback) {
      Optional<String> v = value(attribute);
      if (v.isPresent() && v.get().isEmpty()) {
        throw new IllegalArgumentException(key(attribute) + " is empty");
      }
      return v.orElse(fallback);
    }

    Set<String> list(String attribute) {
      return value(attribute)
          .map(
              v ->
                  Set.copyOf(
                      new LinkedHashSet<>(
                          Arrays.stream(v.split(","))
                              .map(String::trim)
                              .filter(s -> !s.isEmpty())
                              .toList())))
          .orElse(Set.of());
    }

    Duration duration(String attribute, Duration fallback) {
      Optional<String> v = value(attribute);
      if (v.isEmpty()) {
        return fallback;
      }
      Duration d;
      try {
        String s = v.get();
        d =
            s.matches("\\d+ms")
                ? Duration.ofMillis(Long.parseLong(s.substring(0, s.length() - 2)))
                : s.matches("\\d+s")
                    ? Duration.ofSeconds(Long.parseLong(s.substring(0, s.length() - 1)))
                    : Duration.parse(s);
      } catch (DateTimeParseException | NumberFormatException e) {
        throw new IllegalArgumentException(
            key(attribute) + "=" + v.get() + " is not a duration such as 500ms, 30s or PT1M");
      }
      if (d.isNegative() || d.isZero()) {
        throw new IllegalArgumentException(key(attribute) + "=" + v.get() + " must be positive");
      }
      return d;
    }
  }
}
