package dev.postbox.runtime.jakarta;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.runtime.api.BrokerOutage;
import dev.postbox.runtime.api.Lag;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

class OutboxReadinessTest {

  private static final Duration THRESHOLD = Duration.ofMinutes(1);

  @Test
  void upWhileTheOldestPendingRowIsYoungerThanTheThreshold() {
    var v = OutboxReadiness.judge(null, new Lag(3, 0, Instant.now()), 12, THRESHOLD);
    assertThat(v.up()).isTrue();
    assertThat(v.data())
        .containsEntry("pending", "3")
        .containsEntry("oldestPendingAgeSeconds", "12");
  }

  @Test
  void downOnceTheOldestPendingRowIsOlder() {
    assertThat(OutboxReadiness.judge(null, new Lag(3, 0, Instant.now()), 61, THRESHOLD).up())
        .isFalse();
  }

  @Test
  void failedRowsAloneDoNotTakeTheApplicationOutOfService() {
    assertThat(OutboxReadiness.judge(null, new Lag(0, 5, null), 0, THRESHOLD).up()).isTrue();
  }

  @Test
  void downWhenTheOutboxCannotBeRead() {
    var v = OutboxReadiness.judge("connection refused", null, 0, THRESHOLD);
    assertThat(v.up()).isFalse();
    assertThat(v.data()).containsEntry("error", "connection refused");
  }

  @Test
  void downWhenTheOldestPendingRowWasCreatedFarInTheFuture() {
    // What a row written in UTC+14 local time and read as UTC looks like: 14 hours ahead.
    var v = OutboxReadiness.judge(null, new Lag(3, 0, Instant.now()), -50_400, THRESHOLD);
    assertThat(v.up()).isFalse();
    assertThat(v.data()).containsEntry("oldestPendingAgeSeconds", "-50400");
    assertThat(v.data().get("error")).contains("50400 s in the future");
  }

  @Test
  void aFewSecondsOfClockSkewIntoTheFutureIsTolerated() {
    assertThat(OutboxReadiness.judge(null, new Lag(3, 0, Instant.now()), -2, THRESHOLD).up())
        .isTrue();
  }

  @Test
  void aBrokerOutageIsReportedApartFromLagAndLagItExplainsKeepsTheAppInService() {
    var outage =
        java.util.List.of(
            new BrokerOutage(
                "orders", Instant.parse("2026-01-01T00:00:00Z"), 7, "TimeoutException"));
    var v = OutboxReadiness.judge(null, new Lag(3_000, 0, Instant.now()), 180, THRESHOLD, outage);
    assertThat(v.up()).isTrue();
    assertThat(v.data())
        .containsEntry("broker", "unavailable")
        .containsEntry("broker unavailable: orders", "since 2026-01-01T00:00:00Z (7 failed tries)")
        .containsKey("lagCause");
    var available =
        OutboxReadiness.judge(
            null, new Lag(3, 0, Instant.now()), 12, THRESHOLD, java.util.List.of());
    assertThat(available.data()).containsEntry("broker", "available");
    // the same lag with the broker available: the relay is not keeping up, and that is DOWN
    assertThat(
            OutboxReadiness.judge(
                    null, new Lag(3_000, 0, Instant.now()), 180, THRESHOLD, java.util.List.of())
                .up())
        .isFalse();
  }
}
