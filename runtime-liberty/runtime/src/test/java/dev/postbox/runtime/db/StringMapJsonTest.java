package dev.postbox.runtime.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

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
  }

  @Test
  void rejectsWhatItNeverWrites() {
    assertThatThrownBy(() -> StringMapJson.read("[1]"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> StringMapJson.read("{\"a\":\"b\";}"))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
