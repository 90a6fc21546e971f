package dev.postbox.runtime.inbox;

import dev.postbox.benchmarks.jmh.SampleEvent;
import dev.postbox.runtime.dedup.DedupFront;
import dev.postbox.spi.Envelope;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Per delivery, in the inbox: the payload fingerprint stored with each inbox row (SHA-256, hex; in
 * this package: it is package-private), and the dedup front's key (the id's two halves, the low one
 * mixed with a keyed hash of the payload).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(1)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 5, time = 2)
public class FingerprintCpuBenchmark {

  Envelope event;

  @Setup
  public void event() {
    event = SampleEvent.envelope();
  }

  @Benchmark
  public String payloadFingerprint() {
    return dev.postbox.runtime.common.Fingerprint.of(event.payload());
  }

  @Benchmark
  public long frontKey() {
    return DedupFront.high(event.id())
        ^ DedupFront.low(event.id())
        ^ DedupFront.hash(event.payload());
  }
}
