package dev.postbox.runtime.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class PartitionerTest {

  @Test
  void aKeyAlwaysLandsInTheSamePartitionWhateverTheEventId() {
    int p = Partitioner.partition("order-42", "e-1", 64);
    assertThat(Partitioner.partition("order-42", "e-2", 64)).isEqualTo(p);
    assertThat(p).isBetween(0, 63);
    // String.hashCode is specified, so every instance and version computes the same partition.
    assertThat(Partitioner.partition("order-42", "x", 64))
        .isEqualTo(Math.floorMod("order-42".hashCode(), 64));
  }

  @Test
  void keysAndKeylessEventsSpreadOverThePartitions() {
    Set<Integer> used = new HashSet<>();
    for (int i = 0; i < 10_000; i++) {
      used.add(Partitioner.partition("key-" + i, "id", 64));
      used.add(Partitioner.partition(null, "id-" + i, 64));
    }
    assertThat(used).hasSize(64);
  }
}
