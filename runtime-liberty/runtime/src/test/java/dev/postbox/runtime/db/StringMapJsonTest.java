package dev.postbox.runtime.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class StringMapJsonTest {

  @Test
  void roundTripsAwkwardValuesInOrder() {
    Map<String, String> h = new LinkedHashMap<>();
    h.put("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    h.put("quote", "say \"hi\"\\ back");
    h.put("control", "tab\tnewline\nbell\u0007");
    h.put("unicode", "ünïcødé ✓ 𝄞");
    h.put("empty", "");
    String json = StringMapJson.write(h);
    assertThat(StringMapJson.read(json)).containsExactlyEntriesOf(h);
    assertThat(StringMapJson.read("{}")).isEmpty();
    assertThat(StringMapJson.read(" { \"a\" : \"b\" } ")).containsEntry("a", "b");
    assertThat(StringMapJson.read("{\"a\":\"\\u00fc\\/\"}")).containsEntry("a", "ü/");
  }

  @Test
  void aNullValueIsWrittenSoThatItReadsBack() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("partition", null);
    assertThat(StringMapJson.read(StringMapJson.write(m)))
        .containsExactly(Map.entry("partition", ""));
  }

  @Test
  void anErrorDoesNotQuoteTheStoredText() {
    assertThatThrownBy(() -> StringMapJson.read("{\"secret\":\"s3cr3t-value\""))
        .isInstanceOf(IllegalArgumentException.class)
        .satisfies(e -> assertThat(e.getMessage()).doesNotContain("s3cr3t-value"))
        .satisfies(e -> assertThat(String.valueOf(e.getCause())).doesNotContain("s3cr3t-value"));
  }

  /**
   * Each of these was accepted, or threw StringIndexOutOfBoundsException, with the hand-written
   * codec this replaced: truncated text, an unknown escape, trailing text.
   */
  @ParameterizedTest
  @ValueSource(
      strings = {
        "[1]",
        "{\"a\":\"b\";}",
        "",
        "{",
        "{\"a\"",
        "{\"a\":\"b",
        "{\"a\":\"b\\u00",
        "{\"a\":\"b\\q\"}",
        "{\"a\":\"b\"} trailing",
        "{\"a\":\"b\"}{}",
        "{\"a\":1}",
        "{\"a\":null}",
        "{\"a\":{\"b\":\"c\"}}",
        "{\"a\":\"b\",\"a\":\"c\"}"
      })
  void rejectsAnythingButOneObjectOfStringsWithAClearError(String json) {
    assertThatThrownBy(() -> StringMapJson.read(json))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("bad string map JSON");
  }
}
