package dev.postbox.payments.orders;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class HoldSettingTest {

  @Test
  void shortFormsAndIsoDurationsParse() {
    assertThat(HoldSetting.parse("15m")).isEqualTo(Duration.ofMinutes(15));
    assertThat(HoldSetting.parse(" 2s ")).isEqualTo(Duration.ofSeconds(2));
    assertThat(HoldSetting.parse("500ms")).isEqualTo(Duration.ofMillis(500));
    assertThat(HoldSetting.parse("1h")).isEqualTo(Duration.ofHours(1));
    assertThat(HoldSetting.parse("PT15M")).isEqualTo(Duration.ofMinutes(15));
  }

  @Test
  void anythingElseIsAClearError() {
    assertThatThrownBy(() -> HoldSetting.parse("soon"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("payments.hold must be a duration");
    assertThatThrownBy(() -> HoldSetting.parse("0s")).hasMessageContaining("must be positive");
    assertThatThrownBy(() -> HoldSetting.parse(null)).isInstanceOf(IllegalArgumentException.class);
  }
}
