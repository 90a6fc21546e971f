/**
 * The relay: publishes committed outbox rows under time-boxed partition leases, in per-key order,
 * woken after each commit with polling as the fallback; failed publishes are retried, broker
 * outages probed, and the operator's view of the outbox is {@code OutboxAdmin}.
 */
package dev.postbox.runtime.relay;
