package dev.postbox.runtime.common;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The one fingerprint function: SHA-256, as lower-case hex. The inbox compares a copy's payload
 * with the recorded one by it, a dead letter carries its payload's, and an idempotency key binds
 * its request by it. One function, so that the three agree on what "the same payload" means.
 */
public final class Fingerprint {

  private Fingerprint() {}

  /** The fingerprint of {@code bytes}. */
  public static String of(byte[] bytes) {
    return HexFormat.of().formatHex(sha256().digest(bytes));
  }

  /**
   * The fingerprint of several parts, each but the last followed by a newline: for a value made of
   * fields, such as an HTTP request's method, path and body.
   */
  public static String ofParts(byte[]... parts) {
    MessageDigest sha = sha256();
    for (int i = 0; i < parts.length; i++) {
      sha.update(parts[i]);
      if (i < parts.length - 1) {
        sha.update((byte) '\n');
      }
    }
    return HexFormat.of().formatHex(sha.digest());
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java platform has SHA-256", e);
    }
  }
}
