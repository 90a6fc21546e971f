package dev.postbox.spi.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import dev.postbox.spi.Broker;
import dev.postbox.spi.testing.ReferenceBroker.Fault;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Event;
import org.junit.platform.testkit.engine.Events;

/**
 * Proves that the conformance kit can fail: a reference broker that breaks one promise makes the
 * test for that promise fail, while the correct broker passes everything ({@link
 * ReferenceBrokerConformanceTest}).
 */
class ConformanceKitCatchesBrokenBrokersTest {

  /** Read by {@link BrokenBrokerSuite}; the test kit runs it synchronously on this thread. */
  static volatile Fault fault;

  @ParameterizedTest(name = "{0} fails {1}")
  @CsvSource({
    "DROP_HEADERS, roundTripIsByteExact",
    "REDELIVER_AFTER_ACK, ackStopsRedelivery",
    "LOSE_UNACKED_ON_CLOSE, unackedDeliveryReturnsAfterConsumerCloses",
    "IGNORE_NACK_DELAY, nackWithDelayRedeliversNoSooner",
    "REVERSE_ORDER, sameKeyArrivesInPublishOrder",
    "DROP_BATCH_TAIL, batchPublishDeliversEveryEnvelope",
    "SHARE_IN_FLIGHT, twoConsumersInOneGroupShareTheWork",
    "ACK_IS_CUMULATIVE, outOfOrderAckNeverLosesAnUnackedDelivery",
    "ACCEPT_OVERSIZED, oversizedMessageIsRefusedPermanently",
    "HANG_WHEN_UNREACHABLE, unreachableBrokerFailsRetriablyInBoundedTime",
    "FROZEN_ATTEMPTS, attemptCountGrowsOnRedelivery",
    "UNBOUNDED_IN_FLIGHT, pollNeverExceedsMaxInFlight",
    "PING_ALWAYS_ANSWERS, pingAnswersWhenReachableAndFailsRetriablyInBoundedTimeWhenNot",
    "CUT_LARGE_PAYLOADS, payloadsAtTheLimitArriveWholeWhenSeveralComeInOnePoll",
  })
  void brokenPromiseFailsItsTest(Fault brokenPromise, String expectedFailure) {
    fault = brokenPromise;
    Events tests =
        EngineTestKit.engine("junit-jupiter")
            .selectors(selectClass(BrokenBrokerSuite.class))
            .execute()
            .testEvents();

    List<String> failed =
        tests.failed().stream()
            .map(Event::getTestDescriptor)
            .map(d -> d.getDisplayName().replace("()", ""))
            .toList();
    assertThat(failed)
        .as("tests failed by a broker with %s", brokenPromise)
        .contains(expectedFailure);
    assertThat(tests.started().count()).as("tests run").isEqualTo(15);
  }

  @org.junit.jupiter.api.Test
  void everyFaultIsCoveredAbove() throws Exception {
    var source =
        ConformanceKitCatchesBrokenBrokersTest.class
            .getDeclaredMethod("brokenPromiseFailsItsTest", Fault.class, String.class)
            .getAnnotation(CsvSource.class);
    List<String> covered =
        List.of(source.value()).stream().map(r -> r.split(",")[0].trim()).toList();
    for (Fault f : Fault.values()) {
      assertThat(covered).as("a test case for fault %s", f).contains(f.name());
    }
  }

  @org.junit.jupiter.api.Test
  void theCorrectBrokerPassesUnderTheSameRunner() {
    fault = null;
    Events tests =
        EngineTestKit.engine("junit-jupiter")
            .selectors(selectClass(BrokenBrokerSuite.class))
            .execute()
            .testEvents();
    assertThat(tests.failed().stream().map(e -> e.getPayload(TestExecutionResult.class)))
        .as("failures of the correct broker")
        .isEmpty();
    assertThat(tests.succeeded().count()).isEqualTo(15);
  }

  /** Nested and so not run by Surefire on its own; only through the test kit above. */
  static class BrokenBrokerSuite extends BrokerConformanceSuite {
    @Override
    protected Broker openBroker() {
      return fault == null ? ReferenceBroker.create() : ReferenceBroker.withFaults(fault);
    }

    @Override
    protected Broker openUnreachableBroker() {
      return fault == null ? ReferenceBroker.unreachable() : ReferenceBroker.unreachable(fault);
    }

    @Override
    protected Duration quietPeriod() {
      return Duration.ofMillis(300);
    }

    @Override
    protected Duration deliveryTimeout() {
      return Duration.ofSeconds(3);
    }

    @Override
    protected Duration unreachableBound() {
      return Duration.ofMillis(500);
    }
  }
}
