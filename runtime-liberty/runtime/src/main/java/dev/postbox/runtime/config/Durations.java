package dev.postbox.runtime.config;

import java.time.Duration;

/** Durations as the configuration writes them: {@code 500ms}, {@code 30s}, {@code 5m}. */
final class Durations {

  private Durations() {}

  static String text(Duration d) {
    long ms = d.toMillis();
    if (ms == 0) {
      return "0s";
    }
    long[] units = {86_400_000L, 3_600_000L, 60_000L, 1_000L, 1L};
    String[] names = {"d", "h", "m", "s", "ms"};
    for (int i = 0; i < units.length; i++) {
      if (ms % units[i] == 0) {
        return (ms / units[i]) + names[i];
      }
    }
    return ms + "ms";
  }
}
