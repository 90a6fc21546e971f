package dev.postbox.spi;

import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Some envelopes of a {@link Publisher#publishAll batch} were not durably accepted.
 *
 * <p>Every envelope whose index is not in {@link #failures()} <em>was</em> accepted, so a caller
 * retries only the failed ones. The exception is retriable only if every failure is.
 */
public final class BatchPublishException extends BrokerException {

  private static final long serialVersionUID = 1L;

  private final transient Map<Integer, BrokerException> failures;
  private final int batchSize;

  /**
   * @param batchSize how many envelopes the batch held
   * @param failures the failure of each envelope that failed, by its index in the batch; not empty,
   *     each index in {@code [0, batchSize)}, no failure itself a batch exception
   */
  public BatchPublishException(int batchSize, Map<Integer, BrokerException> failures) {
    super(summary(batchSize, failures), firstCause(failures));
    for (Map.Entry<Integer, BrokerException> f : failures.entrySet()) {
      if (f.getKey() < 0 || f.getKey() >= batchSize) {
        throw new IllegalArgumentException("failure index " + f.getKey() + " out of range");
      }
      if (f.getValue() instanceof BatchPublishException) {
        throw new IllegalArgumentException("batch failures do not nest");
      }
    }
    this.batchSize = batchSize;
    this.failures = Collections.unmodifiableMap(new TreeMap<>(failures));
  }

  /** Each failed envelope's exception, by its index in the batch, in index order. */
  public Map<Integer, BrokerException> failures() {
    return failures;
  }

  /** How many envelopes the batch held. */
  public int batchSize() {
    return batchSize;
  }

  /** The indexes that were accepted: every index not in {@link #failures()}. */
  public List<Integer> succeeded() {
    return java.util.stream.IntStream.range(0, batchSize)
        .filter(i -> !failures.containsKey(i))
        .boxed()
        .toList();
  }

  @Override
  public boolean isRetriable() {
    return failures.values().stream().allMatch(BrokerException::isRetriable);
  }

  private static String summary(int batchSize, Map<Integer, BrokerException> failures) {
    if (failures == null || failures.isEmpty()) {
      throw new IllegalArgumentException("a batch failure needs at least one failed envelope");
    }
    BrokerException first = firstCause(failures);
    return failures.size()
        + " of "
        + batchSize
        + " envelopes failed; first: "
        + (first == null ? "?" : first.getMessage());
  }

  private static BrokerException firstCause(Map<Integer, BrokerException> failures) {
    return failures == null || failures.isEmpty()
        ? null
        : new TreeMap<>(failures).firstEntry().getValue();
  }
}
