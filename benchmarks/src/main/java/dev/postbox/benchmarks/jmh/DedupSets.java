package dev.postbox.benchmarks.jmh;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.postbox.runtime.dedup.DedupFront;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.camel.support.processor.idempotent.MemoryIdempotentRepository;

/**
 * The in-memory contenders of the dedup benchmarks, behind one question: "seen this id? if not,
 * remember it". Each is given the id as two longs and uses its natural key: Postbox's front the
 * longs, the maps a {@link UUID}, Camel (whose repository takes strings) the id's text.
 */
public interface DedupSets {

  /** True if {@code (hi, lo)} was seen (a duplicate); otherwise records it and returns false. */
  boolean seenOrRecord(long hi, long lo);

  /** The retention window every contender is given: far longer than any run. */
  Duration WINDOW = Duration.ofHours(1);

  /** A contender by name, bounded to about {@code liveIds} ids. */
  static DedupSets of(String name, int liveIds) {
    return switch (name) {
      case "postbox" -> postbox(liveIds);
      case "chm" -> concurrentHashMap(liveIds);
      case "caffeine" -> caffeine(liveIds);
      case "camel" -> camel(liveIds);
      default -> throw new IllegalArgumentException("no contender named " + name);
    };
  }

  /** Postbox's {@link DedupFront}: 128-bit ids inline, retention by age. */
  static DedupSets postbox(int liveIds) {
    DedupFront front = DedupFront.of(WINDOW, liveIds);
    return (hi, lo) -> !front.record(hi, lo); // one probe: record says whether it was held
  }

  /** A {@link ConcurrentHashMap} of {@link UUID}s, the oldest removed to stay within the bound. */
  static DedupSets concurrentHashMap(int liveIds) {
    ConcurrentHashMap<UUID, Boolean> map = new ConcurrentHashMap<>(liveIds * 4 / 3 + 16);
    ConcurrentLinkedQueue<UUID> order = new ConcurrentLinkedQueue<>();
    AtomicInteger size = new AtomicInteger();
    return (hi, lo) -> {
      UUID id = new UUID(hi, lo);
      if (map.putIfAbsent(id, Boolean.TRUE) != null) {
        return true;
      }
      order.add(id);
      if (size.incrementAndGet() > liveIds) {
        UUID oldest = order.poll();
        if (oldest != null) {
          map.remove(oldest);
          size.decrementAndGet();
        }
      }
      return false;
    };
  }

  /** Caffeine with {@code expireAfterWrite} and {@code maximumSize} (TinyLFU admission). */
  static DedupSets caffeine(int liveIds) {
    Cache<UUID, Boolean> cache =
        Caffeine.newBuilder().expireAfterWrite(WINDOW).maximumSize(liveIds).build();
    var map = cache.asMap();
    return (hi, lo) -> map.putIfAbsent(new UUID(hi, lo), Boolean.TRUE) != null;
  }

  /** Apache Camel's {@code MemoryIdempotentRepository}: an LRU cache of strings. */
  static DedupSets camel(int liveIds) {
    MemoryIdempotentRepository repo =
        (MemoryIdempotentRepository) MemoryIdempotentRepository.memoryIdempotentRepository(liveIds);
    try {
      repo.start();
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
    return (hi, lo) -> !repo.add(new UUID(hi, lo).toString());
  }
}
