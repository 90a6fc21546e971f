package dev.postbox.benchmarks.jmh;

import java.util.concurrent.TimeUnit;
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
 * The same question as {@link DedupSetBenchmark}, with the same workload (90 % new ids, 10 % copies
 * of recent ones, a contender that misses a copy fails the run), asked of the on-disk contenders
 * ({@link DedupStores}): raw RocksDB with Kafka Streams' options, the Streams deduplicator's
 * processor on its store, and Kafka Streams' canonical window-store dedup. One thread: a Kafka
 * Streams task is single-threaded. One million live ids (filling ten million through a processor
 * takes minutes per contender).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(
    value = 1,
    jvmArgsAppend = {"-Xms2g", "-Xmx2g"})
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 5, time = 2)
public class DedupStoreBenchmark {

  @Param({"rocksdb", "streams-dedup", "window-store"})
  public String contender;

  @Param({"1000000"})
  public int liveIds;

  DedupStores store;

  @Setup(Level.Trial)
  public void fill() {
    store = DedupStores.of(contender);
    DedupSetBenchmark.fill(store, liveIds);
  }

  @TearDown(Level.Trial)
  public void close() {
    store.close();
  }

  @Benchmark
  @Threads(1)
  public boolean oneThread(DedupSetBenchmark.Stream s) {
    return s.next(store);
  }
}
