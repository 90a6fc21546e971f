package dev.postbox.payments;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.spi.BrokerProvider;
import dev.postbox.spi.testing.TestBroker;
import dev.postbox.spi.testing.TestBrokers;
import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The crash harness on every broker an adapter's test-jar registers ({@link TestBrokers}), on
 * PostgreSQL, with the server JVMs in UTC+14 (timestamps must not depend on the JVM's time zone).
 * The runs' shapes follow from what each broker promises, not from its name or its place in a list:
 *
 * <ul>
 *   <li>a broker that keeps per-key order runs two servers, one of them paused with SIGSTOP while
 *       it holds a lease, and its two kills aim at the relay's and the inbox's windows (published
 *       not marked, committed not acknowledged), where a broker can break order or lose an ack;
 *   <li>one that does not (SQS standard queues) runs one server, and its kills aim at the inbox's
 *       window and the HTTP one (committed, not answered);
 *   <li>a broker that drops copies on its own (SQS FIFO) gets no byte-for-byte republished copies.
 * </ul>
 *
 * <p>{@code -Dtorture.brokers=kafka,sqs-fifo} runs only those (docs/reliability.md).
 */
class BrokerTortureIT {

  static final String UTC_PLUS_14 = "Pacific/Kiritimati";

  /** {@link TortureHarness#KILL_PHASES}: published not marked, then committed not acknowledged. */
  static final int RELAY_WINDOW = 1;

  /**
   * {@link TortureHarness#KILL_PHASES}: committed not acknowledged, then committed not answered.
   */
  static final int INBOX_WINDOW = 2;

  static Stream<Arguments> registeredBrokers() {
    List<TestBroker.Provider> runs = new ArrayList<>(TestBrokers.all());
    String only = System.getProperty("torture.brokers", "");
    if (!only.isBlank()) {
      runs = new ArrayList<>();
      for (String name : only.split(",")) {
        runs.add(TestBrokers.named(name.trim())); // an unknown name fails, naming the known ones
      }
    }
    return runs.stream()
        .map(
            p ->
                Arguments.of(
                    p.name(),
                    new TortureRun(
                        p.name(),
                        p.ordered() ? RELAY_WINDOW : INBOX_WINDOW,
                        "postgresql",
                        UTC_PLUS_14,
                        p.dropsCopies() ? 0 : 20,
                        true,
                        p.ordered() ? 2 : 1)));
  }

  @Test
  void everyAdapterOnTheClassPathHasARegisteredTestBroker() {
    // A test-jar or a services file missing would make every "each broker" test quietly smaller.
    Set<String> adapters = new TreeSet<>();
    for (BrokerProvider p : ServiceLoader.load(BrokerProvider.class)) {
      if (p.getClass().getPackageName().startsWith("dev.postbox.broker.")) {
        adapters.add(p.name());
      }
    }
    Set<String> tested = new TreeSet<>();
    TestBrokers.all().forEach(p -> tested.add(p.adapter()));
    assertThat(adapters).isNotEmpty();
    assertThat(tested).containsAll(adapters);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("registeredBrokers")
  void everyAcceptedOrderIsChargedAndNotifiedExactlyOnceThroughCrashes(
      String broker, TortureRun run) throws Exception {
    run.prove();
  }
}
