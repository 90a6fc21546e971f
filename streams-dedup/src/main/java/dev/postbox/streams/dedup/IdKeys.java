package dev.postbox.streams.dedup;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import org.apache.kafka.common.utils.Bytes;

/**
 * Turns an event id into the 16-byte key the store holds. A canonical lower-case UUID (what the
 * Postbox relay and most producers send) is stored as its 16 bytes. Any other id is stored as the
 * first 16 bytes of SHA-256 over a fixed prefix and the id's UTF-8 bytes: stable across processes
 * and versions (the keys live in a changelog), and two different ids share a key with probability
 * about n²/2¹²⁹, far below a disk error. Ids are case-sensitive, so {@code "A…"} and {@code "a…"}
 * stay apart: an upper-case UUID is hashed, not parsed.
 *
 * <p>One instance per processor: it reuses its digest, so it is not thread-safe.
 */
final class IdKeys {

  static final int LENGTH = 16;
  private static final byte[] DOMAIN = "postbox-dedup-id\0".getBytes(StandardCharsets.UTF_8);
  private final MessageDigest sha256;

  IdKeys() {
    try {
      sha256 = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required of every Java platform", e);
    }
  }

  Bytes of(String id) {
    byte[] key = new byte[LENGTH];
    if (isCanonicalUuid(id)) {
      ByteBuffer.wrap(key).putLong(hex(id, 0, 18)).putLong(hex(id, 19, 36));
    } else {
      sha256.reset();
      sha256.update(DOMAIN);
      System.arraycopy(sha256.digest(id.getBytes(StandardCharsets.UTF_8)), 0, key, 0, LENGTH);
    }
    return Bytes.wrap(key);
  }

  /** {@code xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx}, lower-case hex. */
  static boolean isCanonicalUuid(String s) {
    if (s.length() != 36) {
      return false;
    }
    for (int i = 0; i < 36; i++) {
      char c = s.charAt(i);
      boolean dash = i == 8 || i == 13 || i == 18 || i == 23;
      if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
        return false;
      }
    }
    return true;
  }

  /** The hex digits of {@code [from, to)}, dashes skipped, as one long (16 digits). */
  private static long hex(String s, int from, int to) {
    long v = 0;
    for (int i = from; i < to; i++) {
      if (s.charAt(i) != '-') {
        v = (v << 4) | Character.digit(s.charAt(i), 16);
      }
    }
    return v;
  }
}
