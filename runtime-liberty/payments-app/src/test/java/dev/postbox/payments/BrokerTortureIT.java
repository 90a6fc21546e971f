package dev.postbox.payments;

import dev.postbox.spi.testing.TestBroker;
import dev.postbox.spi.testing.TestBrokers;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The crash harness on every broker an adapter's test-jar registers ({@link TestBrokers}), on
 * PostgreSQL. The runs' shapes follow from what each broker promises, not from its name:
 *
 * <ul>
 *   <li>a broker that keeps per-key order runs two servers, one of them paused with SIGSTOP while
 *       it holds a lease; one that does not (SQS standard queues) runs one;
 *   <li>a broker that drops copies on its own (SQS FIFO) gets no byte-for-byte republished copies;
 *   <li>the kills of the n-th broker by name start at window n (mod 3), so between them the runs
 *       aim at every window, and every second run's server JVM is in UTC+14 (timestamps must not
 *       depend on the JVM's time zone).
 * </ul>
 *
 * <p>{@code -Dtorture.brokers=kafka,sqs-fifo} runs only those (docs/reliability.md).
 */
class BrokerTortureIT {

  static final String UTC_PLUS_14 = "Pacific/Kiritimati";

  static Stream<Arguments> registeredBrokers() {
    List<TestBroker.Provider> all = TestBrokers.all();
    String only = System.getProperty("torture.brokers", "");
    Set<String> chosen = only.isBlank() ? null : Set.of(only.split(","));
    List<Arguments> runs = new ArrayList<>();
    for (int i = 0; i < all.size(); i++) {
      TestBroker.Provider p = all.get(i);
      if (chosen != null && !chosen.contains(p.name())) {
        continue;
      }
      runs.add(
          Arguments.of(
              p.name(),
              new TortureRun(
                  p.name(),
                  i % TortureHarness.KILL_PHASES.size(),
                  "postgresql",
                  i % 2 == 1 ? UTC_PLUS_14 : null,
                  p.dropsCopies() ? 0 : 20,
                  true,
                  p.ordered() ? 2 : 1)));
    }
    return runs.stream();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("registeredBrokers")
  void everyAcceptedOrderIsChargedAndNotifiedExactlyOnceThroughCrashes(
      String broker, TortureRun run) throws Exception {
    run.prove();
  }
}
