package dev.postbox.spi;

/** Helpers that adapters share for partial batch failures. */
public final class Batches {

  private Batches() {}

  /**
   * The failure to report for an envelope that was not sent because an earlier envelope with the
   * same key failed. It is as retriable as that earlier failure: once the earlier envelope goes
   * through, this one can follow.
   */
  public static BrokerException heldBack(BrokerException earlier) {
    String message = "not sent: an earlier envelope with the same key failed";
    return earlier.isRetriable()
        ? new RetriableBrokerException(message, earlier)
        : new PermanentBrokerException(message, earlier);
  }
}
