package dev.postbox.benchmarks.jmh;

import java.lang.management.ManagementFactory;
import java.util.SplittableRandom;

/**
 * Bytes per live id of each in-memory dedup contender, by heap delta: the used heap after a full
 * GC, before and after filling the contender with {@code ids} random 128-bit ids (the contender
 * still referenced). Run: {@code java -Xmx8g -cp … dev.postbox.benchmarks.jmh.DedupMemory [ids]};
 * see docs/benchmarks.md.
 */
public final class DedupMemory {

  private DedupMemory() {}

  public static void main(String[] args) {
    int ids = args.length > 0 ? Integer.parseInt(args[0]) : 10_000_000;
    System.out.printf("bytes per live id at %,d ids (heap delta after a full GC)%n", ids);
    for (String name : new String[] {"postbox", "chm", "caffeine", "camel"}) {
      long before = usedAfterGc();
      DedupSets set = DedupSets.of(name, ids);
      SplittableRandom r = new SplittableRandom(1);
      for (int i = 0; i < ids; i++) {
        set.seenOrRecord(r.nextLong(), r.nextLong());
      }
      long after = usedAfterGc();
      System.out.printf("%-10s %8.1f bytes/id%n", name, (after - before) / (double) ids);
      if (set.seenOrRecord(0, 0)) { // keeps the set reachable until measured
        System.out.println("(0,0) was already there");
      }
    }
  }

  private static long usedAfterGc() {
    for (int i = 0; i < 3; i++) {
      System.gc();
    }
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
  }
}
