package dev.postbox.runtime.dedup;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.management.ManagementFactory;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayDeque;
import java.util.HashSet;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class DedupFrontTest {

  /** A clock the test moves on. */
  static final class ManualClock extends Clock {
    long millis = 1_700_000_000_000L;

    @Override
    public java.time.ZoneId getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(java.time.ZoneId zone) {
      return this;
    }

    @Override
    public Instant instant() {
      return Instant.ofEpochMilli(millis);
    }

    @Override
    public long millis() {
      return millis;
    }
  }

  @Test
  void anIdIsSeenOnlyOnceRecorded() {
    DedupFront front = DedupFront.of(Duration.ofMinutes(5), 1_000);
    String id = UUID.randomUUID().toString();
    assertThat(front.seen(id)).isFalse();
    front.record(id);
    assertThat(front.seen(id)).isTrue();
    assertThat(front.seen(UUID.randomUUID().toString())).isFalse();
    assertThat(front.size()).isEqualTo(1);
  }

  @Test
  void idsThatAreNotCanonicalUuidsAreHeldAndToldApart() {
    DedupFront front = DedupFront.of(Duration.ofMinutes(5), 10_000);
    for (int i = 0; i < 5_000; i++) {
      front.record("order-" + i);
    }
    for (int i = 0; i < 5_000; i++) {
      assertThat(front.seen("order-" + i)).isTrue();
      assertThat(front.seen("order-" + (i + 5_000))).isFalse();
    }
    assertThat(front.seen("")).isFalse();
    front.record("");
    assertThat(front.seen("")).isTrue();
  }

  @Test
  void idsDifferingOnlyInCaseAreDifferentIds() {
    // the database compares ids case and all; so must the front, or a new event is a false hit
    DedupFront front = DedupFront.of(Duration.ofMinutes(5), 1_000);
    String lower = "0f8fad5b-d9cb-469f-a165-70867728950e";
    front.record(lower);
    assertThat(DedupFront.isUuid(lower)).isTrue();
    assertThat(DedupFront.isUuid(lower.toUpperCase())).isFalse();
    assertThat(front.seen(lower.toUpperCase())).isFalse();
    assertThat(front.seen("0f8fad5b-d9cb-469f-a165-70867728950f")).isFalse();
    assertThat(front.seen("0f8fad5bd9cb-469f-a165-70867728950e-")).isFalse();
  }

  @Test
  void afterTenMillionFreshIdsEveryIdYoungerThanTheWindowIsStillAHit() {
    // Frequency-based admission (TinyLFU) turns away one-hit ids; this front must keep them all.
    ManualClock clock = new ManualClock();
    int total = 10_000_000;
    DedupFront front = DedupFront.of(Duration.ofSeconds(50), 5_100_000, clock);
    SplittableRandom ids = new SplittableRandom(42);
    for (int i = 0; i < total; i++) {
      if (i % 100_000 == 0) {
        clock.millis += 1_000; // 100 s for all: the first half is older than the window at the end
      }
      front.record(ids.nextLong(), ids.nextLong());
    }
    // The ids of the last window: recorded at t=51..100 s, and now is 100 s. Those of t=1..49 s
    // must have left by age; t=50 sits on the window's edge.
    SplittableRandom replay = new SplittableRandom(42);
    int younger = 0;
    int older = 0;
    for (int i = 0; i < total; i++) {
      boolean hit = front.seen(replay.nextLong(), replay.nextLong());
      int second = i / 100_000 + 1;
      if (second > 50) {
        assertThat(hit).as("id %d recorded at %d s", i, second).isTrue();
        younger++;
      } else if (second < 50 && hit) {
        older++;
      }
    }
    assertThat(younger).isEqualTo(total / 2);
    assertThat(older).isZero();
    assertThat(front.sizeEvictions()).isZero();
    assertThat(front.ageEvictions()).isGreaterThanOrEqualTo(4_900_000);
  }

  @Test
  void idsLeaveByAgeOnceTheWindowHasPassed() {
    ManualClock clock = new ManualClock();
    DedupFront front = DedupFront.of(Duration.ofSeconds(30), 1_000, clock);
    front.record("a");
    clock.millis += 30_000;
    front.record("b");
    assertThat(front.seen("a")).as("exactly one window old: still held").isTrue();
    clock.millis += 1_001;
    front.record("c");
    assertThat(front.seen("a")).isFalse();
    assertThat(front.seen("b")).isTrue();
    assertThat(front.seen("c")).isTrue();
    // an id past its window is no longer seen at once; it is purged when its segment next records
    assertThat(front.ageEvictions())
        .as("b and c share no segment with a, or a was purged")
        .isBetween(0L, 1L);
    assertThat(front.sizeEvictions()).isZero();
  }

  @Test
  void theSizeBoundDropsTheOldestAndCountsIt() {
    DedupFront front = DedupFront.of(Duration.ofHours(1), 1_000);
    for (int i = 0; i < 100_000; i++) {
      front.record("id-" + i);
    }
    assertThat(front.sizeEvictions()).isPositive();
    assertThat(front.size() + front.sizeEvictions()).isEqualTo(100_000);
    assertThat(front.size()).isLessThan(5_000); // about the bound, plus each segment's margin
    for (int i = 99_000; i < 100_000; i++) {
      assertThat(front.seen("id-" + i)).as("one of the newest").isTrue();
    }
    assertThat(front.seen("id-0")).isFalse();
  }

  @Test
  void recordingAHeldIdAgainKeepsOneCopyAndItsFirstAge() {
    ManualClock clock = new ManualClock();
    DedupFront front = DedupFront.of(Duration.ofSeconds(10), 100, clock);
    front.record("x");
    clock.millis += 8_000;
    front.record("x");
    assertThat(front.size()).isEqualTo(1);
    clock.millis += 3_000;
    front.record("y");
    assertThat(front.seen("x")).isFalse();
  }

  @Test
  void idsCraftedToShareAnUnkeyedMixStillSpread() {
    // With a mix of hi ^ rotl(lo, 31), as the first version had, every one of these ids had the
    // same hash: one segment, one probe sequence ever longer. Keyed, they spread.
    Set<Long> mixes = new HashSet<>();
    for (long i = 0; i < 10_000; i++) {
      long hi = i * 0x9E3779B97F4A7C15L;
      long lo = Long.rotateRight(hi ^ 0x1234_5678_9ABC_DEF0L, 31);
      assertThat(hi ^ Long.rotateLeft(lo, 31)).isEqualTo(0x1234_5678_9ABC_DEF0L);
      mixes.add(DedupFront.mix(hi, lo) >>> 48);
    }
    assertThat(mixes)
        .as("distinct top 16 bits (segments) among 10,000 ids")
        .hasSizeGreaterThan(8_000);
  }

  @Test
  void clearForgetsEverything() {
    DedupFront front = DedupFront.of(Duration.ofMinutes(1), 1_000);
    for (int i = 0; i < 500; i++) {
      front.record("e" + i);
    }
    front.clear();
    assertThat(front.size()).isZero();
    for (int i = 0; i < 500; i++) {
      assertThat(front.seen("e" + i)).isFalse();
    }
    front.record("e1");
    assertThat(front.seen("e1")).isTrue();
  }

  @Test
  void agreesWithASimpleModelUnderRandomAdditionsAndExpiry() {
    // Many deletions among re-recorded ids: backward shifts must never hide an id that is held,
    // nor keep one that left.
    ManualClock clock = new ManualClock();
    // ~300 live ids at once: rings wrap many times and most records purge one
    DedupFront front = DedupFront.of(Duration.ofSeconds(5), 16 * 64, clock);
    SplittableRandom r = new SplittableRandom(7);
    ArrayDeque<long[]> order = new ArrayDeque<>();
    Set<String> held = new HashSet<>();
    for (int step = 0; step < 200_000; step++) {
      if (r.nextInt(50) == 0) {
        clock.millis += 1_000;
      }
      long now = clock.millis / 1000;
      while (!order.isEmpty() && now - order.peek()[2] > 5) {
        long[] gone = order.poll();
        held.remove(gone[0] + "/" + gone[1]);
      }
      long hi = r.nextInt(3_000); // collisions of ids on purpose: re-recording a held id
      long lo = r.nextInt(2);
      boolean added = front.record(hi, lo);
      String k = hi + "/" + lo;
      boolean isNew = held.add(k);
      assertThat(added).as("step %d: record says whether it was held", step).isEqualTo(isNew);
      if (isNew) {
        order.add(new long[] {hi, lo, now});
      }
      if (front.sizeEvictions() > 0) {
        break; // the model has no size bound; the bound is tested elsewhere
      }
      long qhi = r.nextInt(3_000);
      long qlo = r.nextInt(2);
      assertThat(front.seen(qhi, qlo))
          .as("step %d", step)
          .isEqualTo(held.contains(qhi + "/" + qlo));
    }
    assertThat(front.sizeEvictions()).isZero();
    assertThat(front.ageEvictions()).isPositive();
  }

  @Test
  void threadsRecordingAtOnceLoseNothing() throws Exception {
    DedupFront front = DedupFront.of(Duration.ofMinutes(5), 400_000);
    ExecutorService pool = Executors.newFixedThreadPool(4);
    CountDownLatch go = new CountDownLatch(1);
    try {
      Future<?>[] done = new Future<?>[4];
      for (int t = 0; t < 4; t++) {
        int me = t;
        done[t] =
            pool.submit(
                () -> {
                  go.await();
                  for (long i = 0; i < 100_000; i++) {
                    front.record(me, i);
                    front.seen(me, i / 2);
                  }
                  return null;
                });
      }
      go.countDown();
      for (Future<?> f : done) {
        f.get(2, TimeUnit.MINUTES);
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(front.size()).isEqualTo(400_000);
    for (long t = 0; t < 4; t++) {
      for (long i = 0; i < 100_000; i++) {
        assertThat(front.seen(t, i)).isTrue();
      }
    }
  }

  @Test
  void seenAndRecordAllocateNothing() {
    com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    DedupFront front = DedupFront.of(Duration.ofMinutes(5), 300_000);
    String[] ids = new String[100_000];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = i % 2 == 0 ? UUID.randomUUID().toString() : "order-" + i;
    }
    for (String id : ids) { // warm up: the table's arrays exist already; this exercises the paths
      front.seen(id);
      front.record(id);
    }
    long thread = Thread.currentThread().getId();
    long before = threads.getThreadAllocatedBytes(thread);
    int hits = 0;
    for (String id : ids) {
      if (front.seen(id)) {
        hits++;
      }
      front.record(id);
    }
    long allocated = threads.getThreadAllocatedBytes(thread) - before;
    assertThat(before).as("this JVM measures allocation").isPositive();
    assertThat(hits).isEqualTo(ids.length);
    // 200,000 operations; allowing a few hundred bytes for the measurement itself
    assertThat(allocated).isLessThan(1_024);
  }

  @Test
  void theKeyedHashIsSipHash24() {
    // the reference test vector of the SipHash paper: key 00..0f, message 00..0e
    byte[] message = new byte[15];
    for (int i = 0; i < message.length; i++) {
      message[i] = (byte) i;
    }
    long k0 = 0x0706050403020100L;
    long k1 = 0x0f0e0d0c0b0a0908L;
    assertThat(DedupFront.sipHash(k0, k1, message)).isEqualTo(0xa129ca6149be45e5L);
    // a string is hashed as its UTF-16LE bytes
    String text = "order-\u00e9\u4e2d-42";
    assertThat(DedupFront.sipHash(k0, k1, text))
        .isEqualTo(
            DedupFront.sipHash(k0, k1, text.getBytes(java.nio.charset.StandardCharsets.UTF_16LE)));
    assertThat(DedupFront.hash(new byte[] {1})).isNotEqualTo(DedupFront.hash(new byte[] {2}));
  }

  @Test
  void badSettingsAreRefusedClearly() {
    assertThatThrownBy(() -> DedupFront.of(Duration.ZERO, 10))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("window");
    assertThatThrownBy(() -> DedupFront.of(Duration.ofSeconds(1), 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("at least one");
    assertThatThrownBy(() -> DedupFront.of(Duration.ofSeconds(1), DedupFront.MAX_IDS + 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("at most " + DedupFront.MAX_IDS);
  }
}
