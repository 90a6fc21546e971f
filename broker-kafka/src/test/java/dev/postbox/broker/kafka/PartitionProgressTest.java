package dev.postbox.broker.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class PartitionProgressTest {

  private final PartitionProgress<String> p = new PartitionProgress<>();

  @Test
  void commitPointStopsAtTheLowestUnackedOffset() {
    for (long o = 10; o < 15; o++) {
      p.delivered(o, "d" + o);
    }
    assertThat(p.settle(12, "d12")).isTrue();
    assertThat(p.settle(14, "d14")).isTrue();
    assertThat(p.commitPoint(15)).isEqualTo(10);
    assertThat(p.settle(10, "d10")).isTrue();
    assertThat(p.commitPoint(15)).isEqualTo(11);
    p.settle(11, "d11");
    assertThat(p.commitPoint(15)).as("13 is still unacked").isEqualTo(13);
    p.settle(13, "d13");
    assertThat(p.commitPoint(15)).isEqualTo(15);
  }

  @Test
  void commitPointNeverPassesWhatIsUnread() {
    p.delivered(3, "d3");
    p.settle(3, "d3");
    assertThat(p.commitPoint(4)).isEqualTo(4);
    assertThat(p.commitPoint(2)).as("a buffered, not yet delivered offset").isEqualTo(2);
  }

  @Test
  void staleSettlementsAreRejected() {
    p.delivered(5, "first");
    assertThat(p.settle(5, "other")).isFalse();
    assertThat(p.settle(5, "first")).isTrue();
    assertThat(p.settle(5, "first")).as("settled twice").isFalse();
  }

  @Test
  void rewindDropsTheTailSoItsLateAcksAreIgnored() {
    for (long o = 0; o < 5; o++) {
      p.delivered(o, "d" + o);
    }
    assertThat(p.rewindTo(2)).containsExactly("d2", "d3", "d4");
    assertThat(p.inFlightCount()).isEqualTo(2);
    assertThat(p.settle(3, "d3")).isFalse();
    assertThat(p.commitPoint(2)).isEqualTo(0);
  }

  @Test
  void advanceOnlyMovesForward() {
    assertThat(p.advanceTo(5)).isTrue();
    assertThat(p.advanceTo(5)).isFalse();
    assertThat(p.advanceTo(3)).isFalse();
    assertThat(p.advanceTo(6)).isTrue();
  }
}
