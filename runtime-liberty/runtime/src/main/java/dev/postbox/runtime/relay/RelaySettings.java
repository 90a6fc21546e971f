package dev.postbox.runtime.relay;

import dev.postbox.runtime.common.RetryPolicy;
import java.time.Duration;
import java.util.Objects;

/**
 * How a relay instance works.
 *
 * @param instanceId unique per running instance (e.g. host + process); leases are held in its name
 * @param partitions P, the number of outbox partitions; every instance must use the same value
 * @param batchSize rows claimed and published per transaction
 * @param leaseDuration how long a partition lease lasts without renewal; a crashed instance's
 *     partitions are taken over after at most this long
 * @param pollInterval how often to look for work nobody woke us up for (the safety net)
 * @param workerThreads partitions published in parallel by this instance
 * @param deleteOnDispatch delete rows once published instead of marking them dispatched
 * @param retry back-off for retriable failures
 * @param retention how long dispatched rows are kept
 * @param retentionBatch rows deleted per retention transaction
 * @param outageProbeInterval the longest wait between two tries of a destination the broker does
 *     not serve (an outage); while it lasts, one call at a time tries it, the others wait
 */
public record RelaySettings(
    String instanceId,
    int partitions,
    int batchSize,
    Duration leaseDuration,
    Duration pollInterval,
    int workerThreads,
    boolean deleteOnDispatch,
    RetryPolicy retry,
    Duration retention,
    int retentionBatch,
    Duration outageProbeInterval) {

  public RelaySettings {
    Objects.requireNonNull(instanceId, "instanceId");
    require(partitions >= 1 && partitions <= 4096, "partitions must be within 1..4096");
    require(batchSize >= 1 && batchSize <= 10_000, "batchSize must be within 1..10000");
    require(leaseDuration.toMillis() >= 300, "leaseDuration must be at least 300ms");
    require(!pollInterval.isNegative() && !pollInterval.isZero(), "pollInterval must be positive");
    require(workerThreads >= 1, "workerThreads must be >= 1");
    Objects.requireNonNull(retry, "retry");
    require(!retention.isNegative(), "retention must not be negative");
    require(retentionBatch >= 1, "retentionBatch must be >= 1");
    require(outageProbeInterval.toMillis() >= 10, "outageProbeInterval must be at least 10ms");
  }

  /** The same with {@code outageProbeInterval} 10 s, as before that setting existed. */
  public RelaySettings(
      String instanceId,
      int partitions,
      int batchSize,
      Duration leaseDuration,
      Duration pollInterval,
      int workerThreads,
      boolean deleteOnDispatch,
      RetryPolicy retry,
      Duration retention,
      int retentionBatch) {
    this(
        instanceId,
        partitions,
        batchSize,
        leaseDuration,
        pollInterval,
        workerThreads,
        deleteOnDispatch,
        retry,
        retention,
        retentionBatch,
        Duration.ofSeconds(10));
  }

  /**
   * Defaults: 64 partitions, batches of 500, 30 s leases, 500 ms polling, 4 workers, keep 7 days.
   */
  public static RelaySettings defaults(String instanceId) {
    return new RelaySettings(
        instanceId,
        64,
        500,
        Duration.ofSeconds(30),
        Duration.ofMillis(500),
        4,
        false,
        RetryPolicy.defaults(),
        Duration.ofDays(7),
        1_000);
  }

  public RelaySettings withPartitions(int p) {
    return new RelaySettings(
        instanceId,
        p,
        batchSize,
        leaseDuration,
        pollInterval,
        workerThreads,
        deleteOnDispatch,
        retry,
        retention,
        retentionBatch,
        outageProbeInterval);
  }

  public RelaySettings withLease(Duration lease) {
    return new RelaySettings(
        instanceId,
        partitions,
        batchSize,
        lease,
        pollInterval,
        workerThreads,
        deleteOnDispatch,
        retry,
        retention,
        retentionBatch,
        outageProbeInterval);
  }

  public RelaySettings withPollInterval(Duration poll) {
    return new RelaySettings(
        instanceId,
        partitions,
        batchSize,
        leaseDuration,
        poll,
        workerThreads,
        deleteOnDispatch,
        retry,
        retention,
        retentionBatch,
        outageProbeInterval);
  }

  public RelaySettings withRetry(RetryPolicy r) {
    return new RelaySettings(
        instanceId,
        partitions,
        batchSize,
        leaseDuration,
        pollInterval,
        workerThreads,
        deleteOnDispatch,
        r,
        retention,
        retentionBatch,
        outageProbeInterval);
  }

  public RelaySettings withBatchSize(int n) {
    return new RelaySettings(
        instanceId,
        partitions,
        n,
        leaseDuration,
        pollInterval,
        workerThreads,
        deleteOnDispatch,
        retry,
        retention,
        retentionBatch,
        outageProbeInterval);
  }

  public RelaySettings withWorkerThreads(int n) {
    return new RelaySettings(
        instanceId,
        partitions,
        batchSize,
        leaseDuration,
        pollInterval,
        n,
        deleteOnDispatch,
        retry,
        retention,
        retentionBatch,
        outageProbeInterval);
  }

  public RelaySettings withRetention(Duration keep, int batch) {
    return new RelaySettings(
        instanceId,
        partitions,
        batchSize,
        leaseDuration,
        pollInterval,
        workerThreads,
        deleteOnDispatch,
        retry,
        keep,
        batch,
        outageProbeInterval);
  }

  public RelaySettings withOutageProbeInterval(Duration interval) {
    return new RelaySettings(
        instanceId,
        partitions,
        batchSize,
        leaseDuration,
        pollInterval,
        workerThreads,
        deleteOnDispatch,
        retry,
        retention,
        retentionBatch,
        interval);
  }

  private static void require(boolean ok, String message) {
    if (!ok) {
      throw new IllegalArgumentException(message);
    }
  }
}
