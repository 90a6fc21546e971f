package dev.postbox.runtime.jakarta;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

class HealthErrorsTest {

  @Test
  void anErrorsTextNeverReachesTheAnswerOnlyItsId() {
    String detail = "Connection to db.internal:5432 refused for user payments";
    String shown = HealthErrors.redact("postbox-outbox", detail);
    assertThat(shown)
        .doesNotContain("db.internal")
        .doesNotContain("payments")
        .contains("error id ");
    assertThat(HealthErrors.redact("postbox-outbox", detail))
        .as("same error, same id")
        .isEqualTo(shown);
  }

  @Test
  void downValuesAreRedactedOthersKept() {
    var out =
        HealthErrors.redactDown(
            "postbox-inbox",
            Map.of("broker", "DOWN: host kafka-1:9092 unreachable", "database", "UP"));
    assertThat(out.get("database")).isEqualTo("UP");
    assertThat(out.get("broker")).startsWith("DOWN, error id ").doesNotContain("kafka-1");
  }
}
