package dev.postbox.runtime.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.runtime.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.Test;

/**
 * The wake-up across instances never holds more than one entry per partition, whatever happens to
 * its connection, and once it turns itself off it holds nothing and says so. Once, a listener that
 * had turned itself off (or could not connect) queued every announcement of every commit for ever.
 */
class OutboxNotificationsIT {

  private static final List<Integer> PARTITIONS = new ArrayList<>();

  static {
    for (int p = 0; p < 64; p++) {
      PARTITIONS.add(p);
    }
  }

  @Test
  void aListenerThatCannotConnectHoldsEachPartitionOnceHoweverManyCommitsAnnounceIt() {
    // A PostgreSQL URL where nothing listens: the listener retries every second, for ever.
    try (OutboxNotifications n =
        new OutboxNotifications(
            TestDatabase.dataSource("jdbc:postgresql://127.0.0.1:1/test?connectTimeout=1"),
            p -> {},
            Executors.defaultThreadFactory())) {
      n.start();
      for (int commit = 0; commit < 100_000; commit++) {
        n.announce(List.of(commit % 64, (commit * 7) % 64));
      }
      assertThat(n.waiting()).isLessThanOrEqualTo(64);
      assertThat(n.listening()).isFalse();
    }
  }

  @Test
  void aListenerOnAnotherDatabaseTurnsItselfOffAndFromThenOnHoldsNothing() {
    try (TestDatabase h2 = TestDatabase.create(TestDatabase.Kind.H2);
        OutboxNotifications n =
            new OutboxNotifications(h2.dataSource(), p -> {}, Executors.defaultThreadFactory())) {
      n.start();
      await()
          .atMost(Duration.ofSeconds(10))
          .until(
              () -> {
                n.announce(PARTITIONS);
                return n.waiting() == 0; // off: announcements are dropped at once
              });
      for (int commit = 0; commit < 10_000; commit++) {
        n.announce(PARTITIONS);
      }
      assertThat(n.waiting()).isZero();
      assertThat(n.listening()).isFalse();
    }
  }

  @Test
  void aDueTimeAnnouncedByOneInstanceReachesTheOthersAsADueTimeAndWakesNoPartition()
      throws Exception {
    try (TestDatabase pg = TestDatabase.create(TestDatabase.Kind.POSTGRESQL)) {
      java.util.List<java.time.Instant> heard =
          java.util.Collections.synchronizedList(new ArrayList<>());
      java.util.List<Integer> woken = java.util.Collections.synchronizedList(new ArrayList<>());
      try (OutboxNotifications sender =
              new OutboxNotifications(
                  pg.dataSource(), p -> {}, t -> {}, Executors.defaultThreadFactory());
          OutboxNotifications receiver =
              new OutboxNotifications(
                  pg.dataSource(), woken::add, heard::add, Executors.defaultThreadFactory())) {
        sender.start();
        receiver.start();
        await()
            .atMost(Duration.ofSeconds(10))
            .until(() -> sender.listening() && receiver.listening());
        java.time.Instant due = java.time.Instant.parse("2026-12-04T18:00:00.123Z");
        sender.announceDue(due.plusSeconds(5));
        sender.announceDue(due); // the earliest one goes
        await().atMost(Duration.ofSeconds(10)).until(() -> !heard.isEmpty());
        assertThat(heard).first().isEqualTo(due);
        sender.announce(List.of(7));
        await().atMost(Duration.ofSeconds(10)).until(() -> woken.contains(7));
        assertThat(woken).containsOnly(7);
      }
    }
  }
}
