package dev.postbox.broker.kafka;

import dev.postbox.benchmarks.jmh.SampleEvent;
import dev.postbox.spi.Envelope;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.header.Headers;
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
 * Per delivery, on the Kafka adapter: a record's CloudEvents headers, key and value decoded into an
 * {@link Envelope} (in this package: the decoder is package-private).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(1)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 5, time = 2)
public class KafkaDecodeCpuBenchmark {

  byte[] key;
  byte[] value;
  Headers headers;

  @Setup
  public void encode() {
    Envelope e = SampleEvent.envelope();
    key = CloudEventsKafkaHeaders.keyBytes(e);
    value = e.payload();
    headers = CloudEventsKafkaHeaders.toHeaders(e);
  }

  @Benchmark
  public Envelope decode() {
    return CloudEventsKafkaHeaders.fromRecord(key, value, headers);
  }
}
