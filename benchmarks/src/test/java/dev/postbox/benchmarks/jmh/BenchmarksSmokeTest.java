package dev.postbox.benchmarks.jmh;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Collection;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * Every JMH benchmark method runs once, briefly and in this JVM, for every contender: the code
 * works and each contender detects every copy (its verification would fail the run). The
 * measurements themselves are not taken here; see docs/benchmarks.md.
 */
class BenchmarksSmokeTest {

  @Test
  void everyBenchmarkMethodRunsForEveryContender() throws Exception {
    Options options =
        new OptionsBuilder()
            .include("dev\\.postbox\\.benchmarks\\.jmh\\..*")
            .include("dev\\.postbox\\..*CpuBenchmark.*")
            .forks(0)
            .warmupIterations(0)
            .measurementIterations(1)
            .measurementTime(TimeValue.milliseconds(50))
            .param(
                "liveIds",
                "200000") // Caffeine keeps its newest 1 % unconditionally: 2,000 > 1,024 recent ids
            .shouldFailOnError(false) // Caffeine may fail its run: it forgets recent ids
            .build();
    Collection<RunResult> results = new Runner(options).run();
    Set<String> ran =
        results.stream()
            .map(
                r ->
                    r.getParams().getBenchmark().replaceAll(".*\\.", "")
                        + "/"
                        + r.getParams().getParam("contender"))
            .collect(Collectors.toSet());
    // A contender that misses a copy fails its run and has no result. These never may. Caffeine
    // (TinyLFU keeps only its newest 1 % for certain) and Camel's repository with two threads (its
    // LRU cache evicts approximately) may, and did here: why neither is the front.
    assertThat(ran)
        .contains(
            "oneThread/postbox",
            "oneThread/chm",
            "oneThread/camel",
            "twoThreads/postbox",
            "twoThreads/chm",
            "oneThread/rocksdb",
            "oneThread/streams-dedup",
            "oneThread/window-store",
            "decode/null", // the Kafka, Artemis and SQS decoders
            "payloadFingerprint/null",
            "frontKey/null",
            "buildBatch/null");
    assertThat(
            results.stream().filter(r -> r.getParams().getBenchmark().endsWith(".decode")).count())
        .as("a decode benchmark per adapter")
        .isEqualTo(3);
    assertThat(
            results.stream()
                .filter(r -> r.getParams().getBenchmark().endsWith(".buildBatch"))
                .map(r -> r.getParams().getParam("lanes")))
        .as("building the batch with 1 and with 4 lanes")
        .containsExactlyInAnyOrder("1", "4");
    assertThat(
            results.stream()
                .filter(r -> r.getParams().getBenchmark().endsWith("TracingBenchmark.event"))
                .map(r -> r.getParams().getParam("tracing")))
        .as("the spans' cost: no tracer, SDK off, SDK on")
        .containsExactlyInAnyOrder("none", "off", "on");
    for (RunResult r : results) {
      assertThat(r.getPrimaryResult().getScore()).as(r.getParams().toString()).isPositive();
    }
  }
}
