package dev.postbox.broker.sqs;

import dev.postbox.benchmarks.jmh.SampleEvent;
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
 * Per delivery, on the SQS adapter: a message's body and attributes decoded into an {@link
 * Envelope} (in this package: the codec is package-private).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(1)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 5, time = 2)
public class SqsDecodeCpuBenchmark {

  SqsMessageCodec.Encoded message;

  @Setup
  public void encode() {
    message = SqsMessageCodec.encode(SampleEvent.envelope());
  }

  @Benchmark
  public Envelope decode() {
    return SqsMessageCodec.decode(message.body(), message.attributes());
  }
}
