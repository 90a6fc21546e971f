package dev.postbox.runtime.common;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class RetryPolicyTest {

  @Test
  void backsOffExponentiallyUpToTheCap() {
    RetryPolicy p = new RetryPolicy(10, Duration.ofSeconds(1), Duration.ofSeconds(30), 0);
    assertThat(p.delayAfter(1)).isEqualTo(Duration.ofSeconds(1));
    assertThat(p.delayAfter(2)).isEqualTo(Duration.ofSeconds(2));
    assertThat(p.delayAfter(5)).isEqualTo(Duration.ofSeconds(16));
    assertThat(p.delayAfter(6)).isEqualTo(Duration.ofSeconds(30));
    assertThat(p.delayAfter(1_000)).isEqualTo(Duration.ofSeconds(30));
  }

  @Test
  void jitterOnlyShortensWithinItsFraction() {
    RetryPolicy p = new RetryPolicy(10, Duration.ofSeconds(10), Duration.ofSeconds(10), 0.2);
    for (int i = 0; i < 1_000; i++) {
      assertThat(p.delayAfter(1)).isBetween(Duration.ofSeconds(8), Duration.ofSeconds(10));
    }
  }

  @Test
  void rejectsNonsense() {
    assertThatThrownBy(() -> new RetryPolicy(0, Duration.ZERO, Duration.ZERO, 0))
        .hasMessageContaining("maxAttempts");
    assertThatThrownBy(() -> new RetryPolicy(1, Duration.ofSeconds(2), Duration.ofSeconds(1), 0))
        .hasMessageContaining("maxDelay");
    assertThatThrownBy(() -> new RetryPolicy(1, Duration.ZERO, Duration.ZERO, 2))
        .hasMessageContaining("jitter");
  }
}
