package dev.postbox.runtime.dedup;

import java.time.Clock;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;

/**
 * An in-memory set of recently processed event ids, in front of the database that stays the truth:
 * a hit means "processed here, and committed", so the delivery can be acknowledged without a round
 * trip; a miss says nothing, and the database decides.
 *
 * <p><b>Contract.</b>
 *
 * <ul>
 *   <li>{@link #record} only after the transaction that processed the event has committed. A
 *       rolled-back transaction records nothing, so a hit can never come from a write that did not
 *       happen. Whoever resets the state behind the front (a task re-initialised, a store restored)
 *       must {@link #clear} it.
 *   <li><b>Retention by age, never by frequency.</b> Every id recorded within the last {@code
 *       window} is kept, however often or rarely it was seen; ids older than the window leave in
 *       the order they came. A size bound backs the window up: when more ids arrive within one
 *       window than it holds, the oldest leave early, and {@link #sizeEvictions()} counts them (a
 *       metric to watch: the bound is too small for the traffic). There is no admission policy:
 *       unlike a TinyLFU cache, a new id that was seen once is always kept.
 *   <li><b>Ids are 128 bits.</b> A UUID in its canonical 36-character lower-case form is stored
 *       exactly (two longs); any other id is reduced to 128 bits: two 64-bit keyed hashes
 *       (SipHash-2-4 under this process's secret keys) of its UTF-16 code units. Two different ids
 *       could then share both; for a billion such ids the chance is about 10<sup>-21</sup>.
 *   <li>{@link #seen} and {@link #record} allocate nothing and are safe from any number of threads:
 *       the set is split into segments by a keyed hash (16, or one per ~8k ids), each guarded by
 *       its own lock, held for one probe. The hash is keyed so that ids cannot be crafted to pile
 *       into one segment or one probe sequence.
 * </ul>
 *
 * <p><b>Layout.</b> Each segment keeps its ids in a ring, in the order they were recorded (two
 * longs and an int of seconds each), and an open-addressing table (an int a slot, at most 3/4 full,
 * linear probing with backward-shift deletion) whose slots hold a ring position and 18 bits of the
 * id's hash, its home slot among them: a probe for an id not held almost never reads the ring, and
 * a deletion never does. Expiry walks the ring from its oldest end. About 29 bytes per id at 10
 * million ids. (Over 400 lines: a data structure of its own, an open-addressing table and a ring,
 * kept consistent under one lock, with their resizing and expiry.)
 */
public final class DedupFront {

  /**
   * Ids per segment, about: small enough that no array is a G1 humongous object (half a region, 512
   * KiB at the smallest region size), which would round each array up to whole regions and cost ~60
   * % more heap (measured: 44 bytes an id at 10M ids with 16 segments); and small enough that a
   * ring position fits 14 bits, leaving 18 bits of every table slot for the hash.
   */
  private static final int IDS_PER_SEGMENT = 8_192;

  /** Segments at most: enough that no segment holds more than {@link #IDS_PER_SEGMENT}. */
  private static final int MAX_SEGMENTS = 65_536;

  /** The largest size bound: {@link #MAX_SEGMENTS} segments of {@link #IDS_PER_SEGMENT}. */
  public static final int MAX_IDS = MAX_SEGMENTS * IDS_PER_SEGMENT;

  private final Segment[] segments;
  private final int segmentShift;
  private final Clock clock;
  private final long originMillis;
  private final int windowSeconds;
  private final int maxIds;
  private final AtomicLong sizeEvictions = new AtomicLong();
  private final AtomicLong ageEvictions = new AtomicLong();

  private DedupFront(Duration window, int maxIds, Clock clock) {
    if (window.isNegative() || window.isZero()) {
      throw new IllegalArgumentException("the dedup window must be positive: " + window);
    }
    if (window.toSeconds() >= Integer.MAX_VALUE / 2) {
      throw new IllegalArgumentException("the dedup window is too long: " + window);
    }
    if (maxIds < 1) {
      throw new IllegalArgumentException("the dedup front must hold at least one id: " + maxIds);
    }
    if (maxIds > MAX_IDS) {
      throw new IllegalArgumentException(
          "the dedup front holds at most " + MAX_IDS + " ids: " + maxIds);
    }
    this.clock = clock;
    this.originMillis = clock.millis();
    // whole seconds, rounded up: an id is never dropped before the window has passed
    this.windowSeconds = (int) ((window.toMillis() + 999) / 1000);
    this.maxIds = maxIds;
    int count = 16; // at least: for the lanes' threads
    while (count < MAX_SEGMENTS && (long) count * IDS_PER_SEGMENT < maxIds) {
      count <<= 1;
    }
    segments = new Segment[count];
    segmentShift = 64 - Integer.numberOfTrailingZeros(count);
    double perSegment = (double) maxIds / count;
    // Ids spread over the segments by hash, not evenly: room for six standard deviations more
    // than the mean, so a full window of maxIds ids fits without any eviction by size.
    // At most ~8,800: a ring position fits the 14 bits a table slot gives it.
    int capacity = (int) Math.ceil(perSegment + 6 * Math.sqrt(perSegment) + 16);
    for (int i = 0; i < count; i++) {
      segments[i] = new Segment(capacity);
    }
  }

  /**
   * A front keeping every id for at least {@code window}, and at most about {@code maxIds} ids.
   *
   * @throws IllegalArgumentException for a window that is not positive, or {@code maxIds < 1}
   */
  public static DedupFront of(Duration window, int maxIds) {
    return of(window, maxIds, Clock.systemUTC());
  }

  /** As {@link #of(Duration, int)}, on the given clock (tests move time on). */
  public static DedupFront of(Duration window, int maxIds, Clock clock) {
    Objects.requireNonNull(window, "window");
    Objects.requireNonNull(clock, "clock");
    return new DedupFront(window, maxIds, clock);
  }

  /**
   * Whether {@code eventId} was recorded within the window (and not pushed out by the size bound).
   * Allocates nothing.
   */
  public boolean seen(String eventId) {
    return seen(high(eventId), low(eventId));
  }

  /** Whether the 128-bit id {@code (hi, lo)} was recorded and is still held. */
  public boolean seen(long hi, long lo) {
    long h = mix(hi, lo);
    return segments[segment(h)].contains(hi, lo, h, now());
  }

  /**
   * Records {@code eventId} as processed. Call it only after the transaction that processed it
   * committed. Allocates nothing.
   *
   * @return true if it was not held, false if it was (see {@link #record(long, long)})
   */
  public boolean record(String eventId) {
    return record(high(eventId), low(eventId));
  }

  /**
   * Records the 128-bit id {@code (hi, lo)}; see {@link #record(String)}. One probe answers both
   * questions, as {@link java.util.Set#add} does.
   *
   * @return true if it was not held (now it is), false if it was held already (its age still runs
   *     from when it was first recorded)
   */
  public boolean record(long hi, long lo) {
    long h = mix(hi, lo);
    return segments[segment(h)].add(hi, lo, h, now());
  }

  /** Forgets every id: the state the front stood in front of was reset or rolled back. */
  public void clear() {
    for (Segment s : segments) {
      s.clear();
    }
  }

  /** Ids held now (each segment counted under its lock; the sum is not one moment's). */
  public long size() {
    long n = 0;
    for (Segment s : segments) {
      n += s.size();
    }
    return n;
  }

  /** Ids that left before their window had passed, because the size bound was reached. */
  public long sizeEvictions() {
    return sizeEvictions.get();
  }

  /**
   * Ids purged because their window had passed. An id past its window is no longer {@link #seen} at
   * once; it is purged when its segment next records.
   */
  public long ageEvictions() {
    return ageEvictions.get();
  }

  /** The size bound given at construction. */
  public int maxIds() {
    return maxIds;
  }

  /** The retention window, in whole seconds. */
  public Duration window() {
    return Duration.ofSeconds(windowSeconds);
  }

  private int now() {
    return (int) ((clock.millis() - originMillis) / 1000);
  }

  private int segment(long h) {
    return (int) (h >>> segmentShift);
  }

  /** Keys of this process's hashes, secret: ids and payloads cannot be crafted to collide. */
  private static final long[] KEYS = new java.security.SecureRandom().longs(8).toArray();

  /**
   * A 64-bit keyed mix of both halves (MurmurHash3's finaliser, twice, under secret keys): ids with
   * patterns spread, and ids chosen to share a segment or a probe sequence cannot be made without
   * the keys (a plain {@code hi ^ lo} mix would let anyone send ids that all collide).
   */
  static long mix(long hi, long lo) {
    return finish(finish(hi ^ KEYS[6]) ^ lo ^ KEYS[7]);
  }

  /**
   * The high half of an id's 128 bits: a canonical lower-case UUID's first 64 bits, or a keyed hash
   * (SipHash-2-4) of any other id. Allocates nothing.
   */
  public static long high(String eventId) {
    return isUuid(eventId) ? hexLong(eventId, 0) : sipHash(KEYS[0], KEYS[1], eventId);
  }

  /** The low half of an id's 128 bits; see {@link #high}. */
  public static long low(String eventId) {
    return isUuid(eventId) ? hexLong(eventId, 19) : sipHash(KEYS[2], KEYS[3], eventId);
  }

  /**
   * A keyed 64-bit hash (SipHash-2-4, with this process's secret key) of bytes, e.g. of a payload
   * to fold into an id's low half, so that a copy with another payload is a miss. Allocates
   * nothing.
   */
  public static long hash(byte[] bytes) {
    return sipHash(KEYS[4], KEYS[5], bytes);
  }

  static long sipHash(long k0, long k1, byte[] bytes) {
    return sipHash(k0, k1, bytes, bytes.length);
  }

  /** SipHash-2-4 of a string's UTF-16LE bytes. */
  static long sipHash(long k0, long k1, String s) {
    return sipHash(k0, k1, s, 2 * s.length());
  }

  /**
   * SipHash-2-4 (Aumasson and Bernstein) of {@code length} bytes of a {@code byte[]}, or of a
   * {@code String}'s UTF-16LE encoding, read in place: one loop for the message words, the last
   * block, and the finalisation.
   */
  private static long sipHash(long k0, long k1, Object source, int length) {
    long v0 = k0 ^ 0x736f6d6570736575L;
    long v1 = k1 ^ 0x646f72616e646f6dL;
    long v2 = k0 ^ 0x6c7967656e657261L;
    long v3 = k1 ^ 0x7465646279746573L;
    int words = length / 8;
    for (int i = 0; i <= words + 1; i++) {
      long m;
      int rounds = 2;
      if (i < words) {
        m = word(source, i);
      } else if (i == words) {
        m = ((long) length << 56) | tail(source, words, length);
      } else {
        m = 0;
        rounds = 4;
        v2 ^= 0xff;
      }
      v3 ^= m;
      for (int r = 0; r < rounds; r++) {
        v0 += v1;
        v1 = Long.rotateLeft(v1, 13) ^ v0;
        v0 = Long.rotateLeft(v0, 32);
        v2 += v3;
        v3 = Long.rotateLeft(v3, 16) ^ v2;
        v0 += v3;
        v3 = Long.rotateLeft(v3, 21) ^ v0;
        v2 += v1;
        v1 = Long.rotateLeft(v1, 17) ^ v2;
        v2 = Long.rotateLeft(v2, 32);
      }
      v0 ^= m;
    }
    return v0 ^ v1 ^ v2 ^ v3;
  }

  /** The {@code i}th little-endian 64-bit word. */
  private static long word(Object source, int i) {
    if (source instanceof byte[] b) {
      long w = 0;
      for (int k = 7; k >= 0; k--) {
        w = (w << 8) | (b[8 * i + k] & 0xff);
      }
      return w;
    }
    String s = (String) source;
    int c = 4 * i;
    return s.charAt(c)
        | (long) s.charAt(c + 1) << 16
        | (long) s.charAt(c + 2) << 32
        | (long) s.charAt(c + 3) << 48;
  }

  /** The bytes after the last whole word, little-endian (fewer than 8). */
  private static long tail(Object source, int words, int length) {
    long w = 0;
    if (source instanceof byte[] b) {
      for (int k = 8 * words, shift = 0; k < length; k++, shift += 8) {
        w |= (long) (b[k] & 0xff) << shift;
      }
      return w;
    }
    String s = (String) source;
    for (int c = 4 * words, shift = 0; c < length / 2; c++, shift += 16) {
      w |= (long) s.charAt(c) << shift;
    }
    return w;
  }

  private static long finish(long h) {
    h ^= h >>> 33;
    h *= 0xff51afd7ed558ccdL;
    h ^= h >>> 33;
    h *= 0xc4ceb9fe1a85ec53L;
    h ^= h >>> 33;
    return h;
  }

  /**
   * The canonical form only: 8-4-4-4-12 lower-case hexadecimal digits. Ids are compared as the
   * database compares them, case and all: an upper-case UUID goes the hashed way, so that it can
   * never meet its lower-case twin, which is another id.
   */
  static boolean isUuid(String s) {
    if (s.length() != 36
        || s.charAt(8) != '-'
        || s.charAt(13) != '-'
        || s.charAt(18) != '-'
        || s.charAt(23) != '-') {
      return false;
    }
    for (int i = 0; i < 36; i++) {
      if (i != 8 && i != 13 && i != 18 && i != 23 && hex(s.charAt(i)) < 0) {
        return false;
      }
    }
    return true;
  }

  /** 16 hex digits from {@code from}, skipping dashes: [0,18) is the high half, [19,36) the low. */
  private static long hexLong(String s, int from) {
    long v = 0;
    int digits = 0;
    for (int i = from; digits < 16; i++) {
      char c = s.charAt(i);
      if (c != '-') {
        v = (v << 4) | hex(c);
        digits++;
      }
    }
    return v;
  }

  private static int hex(char c) {
    if (c >= '0' && c <= '9') {
      return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
      return c - 'a' + 10;
    }
    return -1;
  }

  /** One lock's share: a ring of ids in recording order, and a table of ring positions. */
  private final class Segment {
    private static final int POSITION_BITS = 14;
    private static final int POSITION = (1 << POSITION_BITS) - 1;

    private final long[] his;
    private final long[] los;
    private final int[] times;

    /**
     * Per slot: 0 when empty; otherwise the ring position + 1 in the low 14 bits and a tag, bits 14
     * to 31 of the id's mix, in the high 18. The home slot is the tag's low bits (the table has at
     * most 16,384 slots), so moving an entry during a deletion never reads the ring; the tag's
     * other bits (at least 4) tell most ids of one home slot apart without reading it either. (The
     * segment comes from the mix's top 16 bits at most, apart from these.)
     */
    private final int[] table;

    private final int mask;
    private int head; // next ring position to write
    private int count;

    Segment(int capacity) {
      if (capacity >= POSITION) {
        throw new IllegalStateException("a segment of " + capacity + " ids is too large");
      }
      his = new long[capacity];
      los = new long[capacity];
      times = new int[capacity];
      int slots = Integer.highestOneBit(Math.max(4, (int) Math.ceil(capacity * 4.0 / 3)) - 1) << 1;
      table = new int[slots];
      mask = slots - 1;
    }

    private static int tag(long h) {
      return (int) h & ~POSITION;
    }

    /** The home slot of a tag, or of a table entry (its high bits are the tag). */
    private int home(int tagged) {
      return (tagged >>> POSITION_BITS) & mask;
    }

    synchronized boolean contains(long hi, long lo, long h, int now) {
      int tag = tag(h);
      for (int slot = home(tag); ; slot = (slot + 1) & mask) {
        int entry = table[slot];
        if (entry == 0) {
          return false;
        }
        if ((entry & ~POSITION) == tag) {
          int pos = (entry & POSITION) - 1;
          if (his[pos] == hi && los[pos] == lo) {
            // past its window it is no longer held, even before a later record purges it
            return now - times[pos] <= windowSeconds;
          }
        }
      }
    }

    synchronized boolean add(long hi, long lo, long h, int now) {
      expire(now);
      int tag = tag(h);
      int slot = home(tag);
      for (; ; slot = (slot + 1) & mask) {
        int entry = table[slot];
        if (entry == 0) {
          break;
        }
        if ((entry & ~POSITION) == tag) {
          int pos = (entry & POSITION) - 1;
          if (his[pos] == hi && los[pos] == lo) {
            return false; // held already (expire() left only ids inside the window)
          }
        }
      }
      if (count == his.length) {
        removeOldest();
        sizeEvictions.incrementAndGet();
        // the removal may have shifted entries into this probe sequence: find the free slot anew
        slot = home(tag);
        while (table[slot] != 0) {
          slot = (slot + 1) & mask;
        }
      }
      his[head] = hi;
      los[head] = lo;
      times[head] = now;
      table[slot] = tag | (head + 1);
      head = head + 1 == his.length ? 0 : head + 1;
      count++;
      return true;
    }

    private void expire(int now) {
      while (count > 0) {
        int oldest = oldest();
        if (now - times[oldest] <= windowSeconds) {
          return;
        }
        removeOldest();
        ageEvictions.incrementAndGet();
      }
    }

    private int oldest() {
      int p = head - count;
      return p < 0 ? p + his.length : p;
    }

    /** Takes the oldest id out of the ring and its slot out of the table (backward shift). */
    private void removeOldest() {
      int pos = oldest();
      int slot = home(tag(mix(his[pos], los[pos])));
      while ((table[slot] & POSITION) != pos + 1) {
        slot = (slot + 1) & mask;
      }
      // Backward-shift deletion: move later entries of the cluster into the hole when their home
      // slot is not between the hole and their current slot, so no probe ever stops too early.
      int hole = slot;
      for (int next = (hole + 1) & mask; table[next] != 0; next = (next + 1) & mask) {
        int entry = table[next];
        int home = home(entry);
        boolean homeInRange =
            hole <= next ? (home > hole && home <= next) : (home > hole || home <= next);
        if (!homeInRange) {
          table[hole] = entry;
          hole = next;
        }
      }
      table[hole] = 0;
      count--;
    }

    synchronized void clear() {
      java.util.Arrays.fill(table, 0);
      head = 0;
      count = 0;
    }

    synchronized int size() {
      return count;
    }
  }
}
