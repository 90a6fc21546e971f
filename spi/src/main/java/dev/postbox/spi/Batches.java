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
    return likewise(earlier, "not sent: an earlier envelope with the same key failed");
  }

  /**
   * The failure to report for an envelope that was not sent because the destination itself failed
   * earlier in the batch (say, the broker did not answer in time). It is as retriable as that
   * failure.
   */
  public static BrokerException notSent(BrokerException destinationFailure) {
    return likewise(destinationFailure, "not sent: the destination failed earlier in this batch");
  }

  private static BrokerException likewise(BrokerException cause, String message) {
    return cause.isRetriable()
        ? new RetriableBrokerException(message, cause)
        : new PermanentBrokerException(message, cause);
  }
}
