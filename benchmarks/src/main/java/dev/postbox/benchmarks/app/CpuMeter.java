package dev.postbox.benchmarks.app;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Stream;

/**
 * CPU time by process over a stretch of a run, from Linux's {@code /proc}: the Liberty server, this
 * JVM (the load generator and, in the Kafka setup, the broker), PostgreSQL's processes, and the
 * machine's idle and I/O-wait time. Where the cores went, not only how fast the answer came.
 */
final class CpuMeter {

  private static final double TICK = 100.0; // USER_HZ on Linux

  private final long serverPid;
  private final Map<String, Double> start;
  private final long startedNanos = System.nanoTime();

  private CpuMeter(long serverPid) {
    this.serverPid = serverPid;
    this.start = sample();
  }

  /** Starts measuring; null where there is no /proc (not Linux). */
  static CpuMeter start(long serverPid) {
    return Files.isReadable(Path.of("/proc/stat")) ? new CpuMeter(serverPid) : null;
  }

  /** Seconds since the start: CPU of server, harness, postgres; machine idle, iowait; wall. */
  Map<String, Double> stop() {
    Map<String, Double> end = sample();
    Map<String, Double> out = new LinkedHashMap<>();
    end.forEach((k, v) -> out.put(k, v - start.getOrDefault(k, 0.0)));
    out.put("wall", (System.nanoTime() - startedNanos) / 1e9);
    return out;
  }

  private Map<String, Double> sample() {
    Map<String, Double> s = new LinkedHashMap<>();
    s.put("server", process(serverPid));
    s.put("harness", process(ProcessHandle.current().pid()));
    double postgres = 0;
    try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
      for (Path p : (Iterable<Path>) procs::iterator) {
        String name = p.getFileName().toString();
        if (name.chars().allMatch(Character::isDigit) && isPostgres(p)) {
          postgres += process(Long.parseLong(name));
        }
      }
    } catch (IOException e) {
      postgres = Double.NaN;
    }
    s.put("postgres", postgres);
    try {
      String[] cpu = Files.readAllLines(Path.of("/proc/stat")).get(0).trim().split("\\s+");
      s.put("idle", Long.parseLong(cpu[4]) / TICK);
      s.put("iowait", Long.parseLong(cpu[5]) / TICK);
    } catch (IOException | RuntimeException e) {
      s.put("idle", Double.NaN);
      s.put("iowait", Double.NaN);
    }
    return s;
  }

  private static boolean isPostgres(Path proc) {
    try {
      return Files.readString(proc.resolve("comm")).trim().startsWith("postgres");
    } catch (IOException gone) {
      return false;
    }
  }

  /** utime + stime of a process, in seconds; 0 once it is gone. */
  private static double process(long pid) {
    try {
      String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
      String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
      return (Long.parseLong(f[11]) + Long.parseLong(f[12])) / TICK;
    } catch (IOException | RuntimeException gone) {
      return 0;
    }
  }
}
