package dev.postbox.payments.crash;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CrashSwitchTest {

  @TempDir Path dir;

  @Test
  void offWithoutADirectory() {
    assertThat(CrashSwitch.from(null)).isNull();
    assertThat(CrashSwitch.from(" ")).isNull();
  }

  @Test
  void unarmedPointsPassThrough() {
    CrashSwitch s = CrashSwitch.from(dir.toString());
    s.reach("inbox.committed-not-acked");
    assertThat(dir.resolve("reached")).doesNotExist();
  }

  @Test
  void anArmedParkHoldsTheFirstThreadOnlyAndSaysWhere() throws Exception {
    CrashSwitch s = CrashSwitch.from(dir.toString());
    Files.writeString(dir.resolve("armed"), "relay.published-not-marked park\n");
    Thread first = new Thread(() -> s.reach("relay.published-not-marked"), "first");
    first.setDaemon(true); // parked for good, as it would be until a SIGKILL
    first.start();
    await().atMost(Duration.ofSeconds(10)).until(() -> Files.exists(dir.resolve("reached")));
    assertThat(Files.readString(dir.resolve("reached")))
        .isEqualTo("relay.published-not-marked first");
    await().atMost(Duration.ofSeconds(10)).until(() -> first.getState() == Thread.State.WAITING);
    // another thread, and another point, pass
    s.reach("relay.published-not-marked");
    s.reach("inbox.committed-not-acked");
    assertThat(first.isAlive()).isTrue();
  }

  @Test
  void anArmedFailureThrowsAsOftenAsArmedThenRearmsOnANewLine() throws Exception {
    CrashSwitch s = CrashSwitch.from(dir.toString());
    Files.writeString(dir.resolve("armed"), "inbox.before-commit fail 2");
    await()
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(
            () ->
                assertThatThrownBy(() -> s.reach("inbox.before-commit"))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("inbox.before-commit"));
    assertThatThrownBy(() -> s.reach("inbox.before-commit"))
        .isInstanceOf(IllegalStateException.class);
    s.reach("inbox.before-commit"); // spent
    assertThat(Files.readString(dir.resolve("reached"))).startsWith("inbox.before-commit ");

    Files.writeString(dir.resolve("armed"), "inbox.before-commit fail 1");
    await()
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(
            () ->
                assertThatThrownBy(() -> s.reach("inbox.before-commit"))
                    .isInstanceOf(IllegalStateException.class));
    Files.delete(dir.resolve("armed"));
    Files.writeString(dir.resolve("armed"), "other.point fail 1");
    await()
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(
            () ->
                assertThatThrownBy(() -> s.reach("other.point"))
                    .isInstanceOf(IllegalStateException.class));
    s.reach("inbox.before-commit"); // no longer armed
  }

  @Test
  void anArmedHoldKeepsTheThreadUntilTheLineIsTakenBack() throws Exception {
    CrashSwitch s = CrashSwitch.from(dir.toString());
    Files.writeString(dir.resolve("armed"), "relay.published-not-marked hold");
    Thread held = new Thread(() -> s.reach("relay.published-not-marked"), "held");
    held.setDaemon(true);
    held.start();
    await().atMost(Duration.ofSeconds(10)).until(() -> Files.exists(dir.resolve("reached")));
    assertThat(Files.readString(dir.resolve("reached")))
        .isEqualTo("relay.published-not-marked held");
    assertThat(held.isAlive()).isTrue();
    Files.delete(dir.resolve("armed"));
    held.join(10_000);
    assertThat(held.isAlive()).as("released once disarmed").isFalse();
  }
}
