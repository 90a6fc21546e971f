package dev.postbox.runtime.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class HeadersJsonTest {

  @Test
  void roundTripsAwkwardValuesInOrder() {
    Map<String, String> h = new LinkedHashMap<>();
    h.put("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    h.put("quote", "say \"hi\"\\ back");
    h.put("control", "tab\tnewline\nbell\u0007");
    h.put("unicode", "ünïcødé ✓ 𝄞");
    h.put("empty", "");
    String json = HeadersJson.write(h);
    assertThat(HeadersJson.read(json)).containsExactlyEntriesOf(h);
    assertThat(HeadersJson.read("{}")).isEmpty();
    assertThat(HeadersJson.read(" { \"a\" : \"b\" } ")).containsEntry("a", "b");
  }

  @Test
  void rejectsWhatItNeverWrites() {
    assertThatThrownBy(() -> HeadersJson.read("[1]")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> HeadersJson.read("{\"a\":\"b\";}"))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
