package dev.postbox.runtime.relay;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class TurnQueueTest {

  private static final long SECOND = 1_000_000_000L;

  @Test
  void aTurnRunningLongerThanThreeLeasesIsStuckAndWithEveryWorkerStuckSoIsEveryPartition() {
    RelaySettings settings =
        RelaySettings.defaults("t")
            .withPartitions(4)
            .withLease(Duration.ofSeconds(1))
            .withWorkerThreads(2);
    TurnQueue queue = new TurnQueue();
    queue.wake(0);
    queue.wake(1);
    List<Integer> first = queue.take(1, 0);
    assertThat(queue.stuck(2 * SECOND, settings)).as("2 s: not yet 3 leases").isEmpty();
    assertThat(queue.stuck(3 * SECOND + 1, settings)).containsExactly(0);
    List<Integer> second = queue.take(1, 3 * SECOND);
    assertThat(queue.stuck(6 * SECOND + 1, settings))
        .as("both workers hang: none is left for the other partitions")
        .containsExactly(0, 1, 2, 3);
    queue.done(first, Set.of(), Set.of(), false);
    assertThat(queue.stuck(6 * SECOND + 1, settings)).containsExactly(1);
    queue.done(second, Set.of(), Set.of(), false);
    assertThat(queue.stuck(60 * SECOND, settings)).isEmpty();
  }
}
