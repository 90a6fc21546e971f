/**
 * The outbox table: rows written in the caller's transaction ({@link
 * dev.postbox.runtime.outbox.OutboxRepository}), and the partition a key's rows belong to ({@link
 * dev.postbox.runtime.outbox.Partitioner}).
 */
package dev.postbox.runtime.outbox;
