package dev.postbox.benchmarks.jmh;

import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The dedup hot path: "have I seen this event id?", asked of each in-memory contender in the same
 * run. Workload: random 128-bit (UUID) ids, 90 % new and 10 % copies of one of the thread's last
 * 1,024 new ids, on a set already holding {@code liveIds} ids. Every contender counts the copies it
 * detects; one that misses a copy fails the run (a dedup set that forgets recent ids is wrong, not
 * slow).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(
    value = 1,
    jvmArgsAppend = {"-Xms6g", "-Xmx6g"})
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 5, time = 2)
public class DedupSetBenchmark {

  @Param({"postbox", "chm", "caffeine", "camel"})
  public String contender;

  @Param({"1000000", "10000000"})
  public int liveIds;

  DedupSets set;

  @Setup(Level.Trial)
  public void fill() {
    set = DedupSets.of(contender, liveIds);
    fill(set, liveIds);
  }

  /** Fills a contender with {@code liveIds} random ids, none of which the streams will send. */
  static void fill(DedupSets set, int liveIds) {
    // SplittableRandom steps its seed by a fixed gamma: seeds that differ by a multiple of it give
    // the same values shifted, so the fill and the streams take seeds far from each other's steps
    SplittableRandom r = new SplittableRandom(0x2545F4914F6CDD1DL);
    for (int i = 0; i < liveIds; i++) {
      set.seenOrRecord(r.nextLong(), r.nextLong());
    }
  }

  /** One thread's id stream: its recent new ids, and the copies expected and found. */
  @State(Scope.Thread)
  public static class Stream {
    static final int RECENT = 1_024;
    SplittableRandom random;
    final long[] recentHi = new long[RECENT];
    final long[] recentLo = new long[RECENT];
    long fresh;
    long copiesSent;
    long copiesFound;

    private static final AtomicLong STREAMS = new AtomicLong(1);

    @Setup(Level.Trial)
    public void seed() {
      random = new SplittableRandom(STREAMS.getAndIncrement() * 0x632BE59BD9B4E019L);
    }

    @TearDown(Level.Iteration)
    public void verify() {
      if (copiesFound != copiesSent) {
        throw new IllegalStateException(
            "the contender detected "
                + copiesFound
                + " of "
                + copiesSent
                + " copies of recent ids: it forgets ids it must keep");
      }
    }

    boolean next(DedupSets set) {
      long hi;
      long lo;
      boolean copy = fresh > 0 && random.nextInt(10) == 0;
      if (copy) {
        int i = random.nextInt((int) Math.min(fresh, RECENT));
        hi = recentHi[i];
        lo = recentLo[i];
        copiesSent++;
      } else {
        hi = random.nextLong();
        lo = random.nextLong();
        int slot = (int) (fresh++ % RECENT);
        recentHi[slot] = hi;
        recentLo[slot] = lo;
      }
      boolean seen = set.seenOrRecord(hi, lo);
      if (seen) {
        copiesFound++;
      }
      return seen;
    }
  }

  @Benchmark
  @Threads(1)
  public boolean oneThread(Stream s) {
    return s.next(set);
  }

  @Benchmark
  @Threads(2)
  public boolean twoThreads(Stream s) {
    return s.next(set);
  }
}
