package dev.postbox.runtime.inbox;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class BatchFallbacksTest {

  private final AtomicLong now = new AtomicLong(1);
  private final BatchFallbacks fallbacks = new BatchFallbacks("orders/payments", now::get);
  private final RuntimeException broken = new IllegalStateException("no per-row counts");

  @Test
  void aRunOfBatchesThatOnlyFailWholeIsWarnedAboutThenAtMostOncePerInterval() {
    assertThat(fallbacks.failedWholeButEachSucceededAlone(broken)).isFalse();
    assertThat(fallbacks.failedWholeButEachSucceededAlone(broken)).isFalse();
    assertThat(fallbacks.failedWholeButEachSucceededAlone(broken)).as("third in a row").isTrue();
    assertThat(fallbacks.failedWholeButEachSucceededAlone(broken)).as("just warned").isFalse();
    now.addAndGet(BatchFallbacks.WARN_EVERY.plus(Duration.ofSeconds(1)).toNanos());
    assertThat(fallbacks.failedWholeButEachSucceededAlone(broken)).as("interval over").isTrue();
  }

  @Test
  void aBatchThatSucceedsBreaksTheRun() {
    fallbacks.failedWholeButEachSucceededAlone(broken);
    fallbacks.failedWholeButEachSucceededAlone(broken);
    fallbacks.batchSucceeded();
    assertThat(fallbacks.failedWholeButEachSucceededAlone(broken)).isFalse();
    assertThat(fallbacks.failedWholeButEachSucceededAlone(broken)).isFalse();
    assertThat(fallbacks.failedWholeButEachSucceededAlone(broken)).isTrue();
  }
}
