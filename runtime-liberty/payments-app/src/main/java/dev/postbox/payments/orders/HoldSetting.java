package dev.postbox.payments.orders;

import java.time.Duration;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Parses {@code payments.hold}: {@code 500ms}, {@code 30s}, {@code 15m}, {@code 2h} or ISO-8601.
 */
final class HoldSetting {

  private static final Pattern SHORT = Pattern.compile("(\\d{1,9})\\s*(ms|s|m|h)");

  private HoldSetting() {}

  static Duration parse(String value) {
    String v = value == null ? "" : value.trim().toLowerCase(Locale.ROOT);
    Matcher m = SHORT.matcher(v);
    Duration d;
    if (m.matches()) {
      long n = Long.parseLong(m.group(1));
      d =
          switch (m.group(2)) {
            case "ms" -> Duration.ofMillis(n);
            case "s" -> Duration.ofSeconds(n);
            case "m" -> Duration.ofMinutes(n);
            default -> Duration.ofHours(n);
          };
    } else {
      try {
        d = Duration.parse(v.toUpperCase(Locale.ROOT));
      } catch (java.time.format.DateTimeParseException e) {
        throw new IllegalArgumentException(
            "payments.hold must be a duration such as 15m, 30s or PT15M, not '" + value + "'");
      }
    }
    if (d.isNegative() || d.isZero()) {
      throw new IllegalArgumentException("payments.hold must be positive, not '" + value + "'");
    }
    return d;
  }
}
