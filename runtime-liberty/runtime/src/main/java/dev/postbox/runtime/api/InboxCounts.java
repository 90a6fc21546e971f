package dev.postbox.runtime.api;

/**
 * What one subscription's inbox did since this instance started.
 *
 * @param received deliveries recorded (deferred mode: queued for a worker)
 * @param processed events whose handler committed
 * @param duplicates deliveries skipped because their event was processed before
 * @param conflicts deliveries whose id was processed before with another payload (dead-lettered)
 * @param retries failed attempts that will be tried again
 * @param deadLettered deliveries dead-lettered, for any reason
 */
public record InboxCounts(
    long received,
    long processed,
    long duplicates,
    long conflicts,
    long retries,
    long deadLettered) {}
