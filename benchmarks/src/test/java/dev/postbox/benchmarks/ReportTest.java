package dev.postbox.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ReportTest {

  @TempDir Path dir;

  @Test
  void summarisesEachFigureAsItsMedianWithMinAndMaxAndWritesTheRounds() throws Exception {
    Path json = dir.resolve("out/relay.json");
    Report report =
        Report.of(
            "relay",
            new String[] {"--bootstrap", "h:1", "--rounds", "4", "--json", json.toString()});
    assertThat(report.rounds()).isEqualTo(4);
    assertThat(report.args()).containsExactly("--bootstrap", "h:1");
    for (double v : new double[] {30, 10, 40, 20}) {
      report.add("one", "throughput", "events/s", v);
    }
    for (double v : new double[] {9, 12, 11, 8}) {
      report.add("one", "p99", "ms", v);
    }
    report.goal("fast", "one", "throughput", ">=", 25);
    report.goal("short", "one", "p99", "<", 10);
    report.finish();

    JsonNode doc = new ObjectMapper().readTree(json.toFile());
    assertThat(doc.get("harness").asText()).isEqualTo("relay");
    assertThat(doc.get("rounds").asInt()).isEqualTo(4);
    JsonNode throughput = doc.get("figures").get(0);
    assertThat(throughput.get("values")).hasSize(4);
    assertThat(throughput.get("values").get(0).asDouble()).isEqualTo(30);
    assertThat(throughput.get("median").asDouble()).isEqualTo(25); // even count: mean of the middle
    assertThat(throughput.get("min").asDouble()).isEqualTo(10);
    assertThat(throughput.get("max").asDouble()).isEqualTo(40);
    assertThat(doc.get("figures").get(1).get("median").asDouble()).isEqualTo(10);
    assertThat(doc.get("goals").get(0).get("met").asBoolean()).isTrue(); // 25 >= 25
    assertThat(doc.get("goals").get(1).get("met").asBoolean()).isFalse(); // 10 is not < 10
    assertThat(doc.get("machine").get("cores").asInt()).isPositive();
  }

  @Test
  void anOddNumberOfRoundsHasItsMiddleValueAsMedian() {
    Report.Figure f = new Report.Figure("p", "m", "u", java.util.List.of(5.0, 1.0, 3.0));
    assertThat(f.median()).isEqualTo(3.0);
  }

  @Test
  void refusesBadOptions() {
    assertThatThrownBy(() -> Report.of("x", new String[] {"--rounds", "0"}))
        .hasMessageContaining("at least 1");
    assertThatThrownBy(() -> Report.of("x", new String[] {"--json"}))
        .hasMessageContaining("needs a value");
  }
}
