package dev.postbox.payments;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.payments.crash.CrashPoints;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

/**
 * One run of the crash harness, reduced for CI: 1,200 orders from clients that each place their
 * customers' orders one after another (a customer's events share a key), 2 SIGKILLs of a server
 * each aimed at its own window (with several servers, at one while the others keep working; each
 * restart must resume within 5 s), with several servers a SIGSTOP pause of a lease holder, a broker
 * restart, a 6-second PostgreSQL outage and 3 transient failures inside inbox transactions, with
 * 20% of the events republished byte for byte and 3 poison messages. The full run is the same test
 * with system properties, e.g. {@code -Dtorture.orders=20000 -Dtorture.kills=5
 * -Dtorture.instances=3} (docs/reliability.md).
 *
 * @param broker a registered test broker's name, or embedded (the Artemis inside the server)
 * @param firstKillPhase where in {@link TortureHarness#KILL_PHASES} this run's kills start, so that
 *     the reduced runs (two kills each) aim at every window between them
 * @param database postgresql, mariadb, or h2 (the embedded default as shipped)
 * @param timeZone the server JVM's default time zone; null for the machine's
 * @param republishPercent the share of events republished byte for byte (the harness reads the
 *     outbox for them); 0 where the broker drops copies on its own
 * @param brokerRestart whether the broker is restarted on its own (not when it lives inside the
 *     server)
 * @param instances how many servers share the database and broker (several only on PostgreSQL);
 *     with several, a lease holder is paused with SIGSTOP for longer than the lease, then resumed
 */
record TortureRun(
    String broker,
    int firstKillPhase,
    String database,
    String timeZone,
    int republishPercent,
    boolean brokerRestart,
    int instances) {

  /** The run's name in the summary file. */
  String label() {
    return broker + (database.equals("postgresql") ? "" : "-" + database);
  }

  /** The run's servers: its shape's, or {@code -Dtorture.instances}; a pause needs several. */
  int servers() {
    return Integer.getInteger("torture.instances", instances);
  }

  /** Runs the harness and asserts what every torture run must show. */
  void prove() throws Exception {
    TortureHarness.Settings settings =
        new TortureHarness.Settings(
                broker,
                Integer.getInteger("torture.orders", 1_200),
                Integer.getInteger("torture.kills", 2),
                firstKillPhase,
                Integer.getInteger("torture.clients", 8),
                republishPercent,
                3,
                brokerRestart,
                Duration.ofSeconds(Integer.getInteger("torture.db-pause-seconds", 6)),
                3,
                "none")
            .on(database, timeZone, java.util.Map.of())
            .across(servers(), servers() > 1);
    TortureHarness.Result result = new TortureHarness(settings).run();
    String summary = result.summary();
    System.out.println("TORTURE SUMMARY\n" + summary);
    Files.writeString(
        Path.of(System.getProperty("java.io.tmpdir"), "torture-" + label() + ".txt"),
        summary + "\n");
    assertThat(result.verdict().problems()).as(summary).isEmpty();
    assertThat(result.accepted()).isEqualTo(settings.orders());
    if (settings.republishPercent() > 0) {
      assertThat(result.republished()).as("the harness republished something").isPositive();
    }
    assertThat(result.killsLanded())
        .as("every kill held a server thread in its window first")
        .hasSize(settings.kills());
    for (TortureHarness.Resume resume : result.resumes()) {
      if (resume.waiting() > 0) {
        assertThat(resume.first())
            .as("a restarted server resumes the work its death held up within 5 s: " + resume)
            .isNotNull()
            .isLessThanOrEqualTo(Duration.ofSeconds(5));
      }
    }
    if (settings.pause()) {
      assertThat(result.fencing())
          .as("the paused lease holder, resumed, tried to mark its batch and was refused")
          .isNotNull()
          .contains("was refused");
    }
    if (result.killsLanded().contains(CrashPoints.HTTP_COMMITTED_NOT_ANSWERED)) {
      assertThat(result.answeredFromIdempotencyKey())
          .as("the client whose POST was committed but never answered got its order back")
          .isPositive();
    }
  }
}
