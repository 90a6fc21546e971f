package dev.postbox.runtime.jakarta;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.runtime.inbox.InboxHealth;
import java.util.Map;
import org.junit.jupiter.api.Test;

class InboxReadinessTest {

  @Test
  void upWhenBrokerAndDatabaseAnswer() {
    var v = InboxReadiness.judge(new InboxHealth(true, null, null, Map.of("q/g", 3L), Map.of()));
    assertThat(v.up()).isTrue();
    assertThat(v.data()).containsEntry("broker", "UP").containsEntry("deferred q/g", "3");
  }

  @Test
  void downWhenTheBrokerDoesNotAnswer() {
    var v = InboxReadiness.judge(new InboxHealth(false, "timed out", null, Map.of(), Map.of()));
    assertThat(v.up()).isFalse();
    assertThat(v.data()).containsEntry("broker", "DOWN: timed out");
  }

  @Test
  void downWhenTheDatabaseDoesNotAnswer() {
    var v = InboxReadiness.judge(new InboxHealth(true, null, "refused", Map.of(), Map.of()));
    assertThat(v.up()).isFalse();
    assertThat(v.data()).containsEntry("database", "DOWN: refused");
  }

  @Test
  void anAdapterThatCannotPingDoesNotCountAgainstReadiness() {
    assertThat(InboxReadiness.judge(new InboxHealth(null, null, null, Map.of(), Map.of())).up())
        .isTrue();
  }

  @Test
  void notReadyBeforeTheFirstReading() {
    var first = new InboxHealth(null, "not checked yet", "not checked yet", Map.of(), Map.of());
    assertThat(InboxReadiness.judge(first).up()).isFalse();
  }

  @Test
  void aConsumerWhosePollsKeepFailingMakesItNotReadyEvenWhenPingsWork() {
    var v =
        InboxReadiness.judge(
            new InboxHealth(
                true,
                null,
                null,
                Map.of(),
                Map.of("orders/payments", "failing for 35 s: Consumer is closed")));
    assertThat(v.up()).isFalse();
    assertThat(v.data())
        .containsEntry("consumer orders/payments", "DOWN: failing for 35 s: Consumer is closed");
  }

  @Test
  void parkedKeysAreShownAndDoNotMakeItUnready() {
    var v =
        InboxReadiness.judge(
            new InboxHealth(
                true,
                null,
                null,
                Map.of(),
                Map.of(),
                Map.of(
                    "ledger/postings", new InboxHealth.OpenLetters(1, 5, 2),
                    "orders/payments", new InboxHealth.OpenLetters(3, 0, 0))));
    assertThat(v.up()).isTrue();
    assertThat(v.data())
        .containsEntry(
            "parked keys ledger/postings", "2 keys wait behind an open dead letter (5 events)")
        .doesNotContainKey("parked keys orders/payments");
  }
}
