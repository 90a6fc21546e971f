/**
 * Keeping tables small: the one batched purge ({@link dev.postbox.runtime.retention.Retention}) for
 * the outbox and the inbox, and {@link dev.postbox.runtime.retention.DatePartitions}, which drops
 * whole buckets of a date-partitioned table instead.
 */
package dev.postbox.runtime.retention;
