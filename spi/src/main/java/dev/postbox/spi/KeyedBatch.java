package dev.postbox.spi;

import java.util.HashMap;
import java.util.Map;

/**
 * The bookkeeping of one {@link Publisher#publishAll} call, written once for every adapter: which
 * envelopes failed and why, and which keys are stopped. Once an envelope fails before it is sent,
 * the later envelopes with its key are held back (reported as failed, never sent), so a retry of
 * the failed ones keeps the key's order. Not thread-safe: one per call.
 */
public final class KeyedBatch {

  private final int size;
  private final Map<Integer, BrokerException> failures = new HashMap<>();
  private final Map<String, BrokerException> stoppedKeys = new HashMap<>();

  /** For a batch of {@code size} envelopes. */
  public KeyedBatch(int size) {
    this.size = size;
  }

  /**
   * Whether the envelope at {@code index} must not be sent because an earlier one with its key
   * failed; if so, it is recorded as {@linkplain Batches#heldBack held back}.
   */
  public boolean heldBack(int index, Envelope envelope) {
    BrokerException earlier = envelope.key() == null ? null : stoppedKeys.get(envelope.key());
    if (earlier == null) {
      return false;
    }
    failures.put(index, Batches.heldBack(earlier));
    return true;
  }

  /** The envelope at {@code index} failed; its key's later envelopes are held back. */
  public void stop(int index, Envelope envelope, BrokerException failure) {
    failures.put(index, failure);
    if (envelope.key() != null) {
      stoppedKeys.putIfAbsent(envelope.key(), failure); // the first failure stopped it
    }
  }

  /**
   * The envelope at {@code index} failed after the later ones were already sent (a pipelined
   * acknowledgement): recorded, no key stopped.
   */
  public void failed(int index, BrokerException failure) {
    failures.put(index, failure);
  }

  /** Whether the envelope at {@code index} has failed. */
  public boolean hasFailed(int index) {
    return failures.containsKey(index);
  }

  /**
   * Ends the call.
   *
   * @throws BatchPublishException naming every failed envelope, if any failed
   */
  public void finish() {
    if (!failures.isEmpty()) {
      throw new BatchPublishException(size, failures);
    }
  }

  /**
   * Checks the envelope at {@code index} with {@link Capabilities#check}. One the broker cannot
   * carry is stopped with {@link #refused}, so its key's later envelopes are held back.
   *
   * @return whether it was refused (then it must not be sent)
   */
  public boolean refuses(int index, String destination, Envelope envelope, Capabilities caps) {
    try {
      caps.check(destination, envelope);
      return false;
    } catch (InvalidEventException invalid) {
      stop(index, envelope, refused(envelope, invalid));
      return true;
    }
  }

  /**
   * The failure for an envelope whose payload is over an adapter's limit.
   *
   * @param limitName the configuration key of the limit, e.g. {@code max.message.bytes}
   * @deprecated declare the limit in {@link Capabilities#maxMessageBytes()} (and the broker's other
   *     rules in its {@link WireRules}) and use {@link #refuses}, which checks them all
   */
  @Deprecated
  public static PermanentBrokerException tooLarge(Envelope e, int limit, String limitName) {
    return new PermanentBrokerException(
        "envelope "
            + e.id()
            + ": payload of "
            + e.payloadSize()
            + " bytes exceeds "
            + limitName
            + " "
            + limit);
  }

  /**
   * The indexes of the envelopes that may be sent now, in order: every one not {@linkplain
   * #heldBack held back} and not {@linkplain #refuses refused} by the broker's capabilities (those
   * are recorded as failed). For adapters whose batch goes out at once (a transaction, a pipeline
   * of confirms).
   */
  public java.util.List<Integer> sendable(
      String destination, java.util.List<Envelope> batch, Capabilities caps) {
    java.util.List<Integer> out = new java.util.ArrayList<>(batch.size());
    for (int i = 0; i < batch.size(); i++) {
      Envelope e = batch.get(i);
      if (!heldBack(i, e) && !refuses(i, destination, e, caps)) {
        out.add(i);
      }
    }
    return out;
  }

  /** The failure for an envelope the broker's {@link Capabilities#check} refuses: permanent. */
  public static PermanentBrokerException refused(Envelope e, InvalidEventException invalid) {
    return new PermanentBrokerException(
        "envelope " + e.id() + " cannot be published: " + invalid.getMessage(), invalid);
  }
}
