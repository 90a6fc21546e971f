package dev.postbox.spi.testing;

import dev.postbox.spi.Envelope;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Tuple;

/**
 * Generators of events' inputs for property-based tests, leaning towards what broke some stage
 * before: NUL and other control characters, unpaired surrogates, the non-characters U+FFFE and
 * U+FFFF, characters that need escaping on some wire ({@code & = % + #}), non-ASCII and
 * supplementary characters, header maps near the size limits, payloads near a broker's limit, and
 * times at the edges of the years 1 to 9999.
 */
public final class HostileEvents {

  private HostileEvents() {}

  /** The inputs of one event, before any check. */
  public record RawEvent(
      String id,
      String type,
      String subject,
      String key,
      String contentType,
      Map<String, String> headers,
      byte[] payload,
      Instant time) {

    /** The envelope of these inputs, with a fixed source; may throw InvalidEventException. */
    public Envelope toEnvelope() {
      return new Envelope(
          id, "urn:postbox:wire", type, subject, key, time, contentType, headers, payload);
    }

    @Override
    public String toString() {
      return "RawEvent[id="
          + escape(id)
          + ", type="
          + escape(type)
          + ", subject="
          + escape(subject)
          + ", key="
          + escape(key)
          + ", contentType="
          + escape(contentType)
          + ", headers="
          + headers.size()
          + " "
          + escape(headers.toString())
          + ", payloadBytes="
          + payload.length
          + ", time="
          + time
          + "]";
    }

    private static String escape(String s) {
      if (s == null) {
        return "null";
      }
      StringBuilder out = new StringBuilder();
      for (char c :
          (s.length() > 200 ? s.substring(0, 200) + "...(" + s.length() + ")" : s).toCharArray()) {
        out.append(c < 0x20 || c > 0x7e ? String.format("\\u%04x", (int) c) : String.valueOf(c));
      }
      return out.toString();
    }
  }

  /**
   * Events to try.
   *
   * @param payloadLimit the broker's payload limit: some payloads are generated just below and just
   *     above it
   */
  public static Arbitrary<RawEvent> events(int payloadLimit) {
    Arbitrary<String> id = text(1, 300);
    Arbitrary<String> type = text(1, 60);
    Arbitrary<String> optional = text(0, 60).injectNull(0.3);
    Arbitrary<String> key = text(0, 1100).injectNull(0.2);
    return Combinators.combine(
            id, type, optional, key, optional, headers(), payloads(payloadLimit), times())
        .as(RawEvent::new);
  }

  /** Mostly short, sometimes long text of characters that broke some stage before. */
  private static Arbitrary<String> text(int min, int max) {
    Arbitrary<Character> plain = Arbitraries.chars().alpha().numeric().with('-', '.', ':', '/');
    Arbitrary<Character> hostile =
        Arbitraries.of(
            '\u0000', '\t', '\n', '\r', '\u001f', '\u007f', '\u0085', '\u009f', '\ud800', '\udbff',
            '\udc00', '\udfff', '\ufffe', '\uffff', '\ufffd', 'é', '中', ' ', '&', '=', '%', '+',
            '#', '*', '"', '\\', '\u2028', '\ufeff');
    Arbitrary<String> emoji = Arbitraries.of("\ud83d\ude00", "\ud800\udc00", "\udbff\udfff");
    Arbitrary<String> one =
        Arbitraries.frequencyOf(
            Tuple(80, plain.map(String::valueOf)),
            Tuple(3, hostile.map(String::valueOf)),
            Tuple(2, emoji));
    Arbitrary<String> shortText =
        one.list().ofMinSize(min).ofMaxSize(Math.min(max, 24)).map(l -> String.join("", l));
    Arbitrary<String> longText =
        Arbitraries.strings().alpha().ofMinLength(Math.max(min, 1)).ofMaxLength(max);
    return Arbitraries.frequencyOf(Tuple(12, shortText), Tuple(1, longText));
  }

  @SuppressWarnings("MethodName")
  private static <T> Tuple.Tuple2<Integer, Arbitrary<? extends T>> Tuple(
      int weight, Arbitrary<? extends T> value) {
    return Tuple.of(weight, value);
  }

  private static Arbitrary<Map<String, String>> headers() {
    Arbitrary<String> name =
        Arbitraries.frequencyOf(
            Tuple(
                30,
                Arbitraries.strings()
                    .withCharRange('a', 'z')
                    .numeric()
                    .ofMinLength(1)
                    .ofMaxLength(12)),
            Tuple(1, Arbitraries.of("Bad", "has-dash", "id", "data", "a".repeat(41))),
            Tuple(2, Arbitraries.of("traceparent", "tracestate")));
    Arbitrary<String> value =
        Arbitraries.frequencyOf(
            Tuple(20, text(0, 40)),
            Tuple(1, Arbitraries.strings().alpha().ofMinLength(1000).ofMaxLength(3000)),
            Tuple(1, Arbitraries.of("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")));
    Arbitrary<Map<String, String>> small = Arbitraries.maps(name, value).ofMaxSize(4);
    Arbitrary<Map<String, String>> many = Arbitraries.maps(name, value).ofMinSize(9).ofMaxSize(34);
    return Arbitraries.frequencyOf(Tuple(6, small), Tuple(1, many))
        .map(m -> new LinkedHashMap<>(m));
  }

  private static Arbitrary<byte[]> payloads(int limit) {
    Arbitrary<byte[]> small = Arbitraries.bytes().array(byte[].class).ofMaxSize(64);
    Arbitrary<byte[]> text = text(0, 200).map(s -> s.getBytes(StandardCharsets.UTF_8));
    Arbitrary<byte[]> marker =
        Arbitraries.of("base64:", "base64:AAAA", "").map(s -> s.getBytes(StandardCharsets.UTF_8));
    Arbitrary<byte[]> nearLimit =
        Arbitraries.oneOf(
                Arbitraries.integers().between(Math.max(0, limit - 40_000), limit),
                Arbitraries.integers().between(Math.max(0, limit - 2_000), limit + 64))
            .map(
                n -> {
                  byte[] b = new byte[n];
                  for (int i = 0; i < n; i++) {
                    b[i] = (byte) ('a' + i % 26);
                  }
                  return b;
                });
    return Arbitraries.frequencyOf(
        Tuple(10, small), Tuple(6, text), Tuple(2, marker), Tuple(1, nearLimit));
  }

  private static Arbitrary<Instant> times() {
    return Arbitraries.frequencyOf(
        Tuple(8, Arbitraries.longs().between(0, 4_000_000_000L).map(Instant::ofEpochSecond)),
        Tuple(
            2,
            Arbitraries.of(
                    List.of(
                        "0001-01-01T00:00:00Z",
                        "9999-12-31T23:59:59.999999Z",
                        "+10000-01-01T00:00:00Z",
                        "-0001-12-31T23:59:59Z",
                        "2026-12-03T10:15:30.123456789Z"))
                .map(Instant::parse)));
  }
}
