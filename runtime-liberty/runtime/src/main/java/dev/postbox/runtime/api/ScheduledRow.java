package dev.postbox.runtime.api;

import java.time.Instant;

/**
 * An outbox event waiting for its due time (see {@link Outbox#record(OutboxEvent, Schedule)}).
 *
 * @param id the outbox row's id (the listing's cursor)
 * @param dueAt when the relay publishes it, in the database's clock
 * @param recordedAt when it was recorded
 * @param expiresAt its expiry, or null
 * @param keepsKeyOrder whether it holds its key's later events back until it is published
 */
public record ScheduledRow(
    long id,
    String eventId,
    String destination,
    String key,
    String type,
    Instant dueAt,
    Instant recordedAt,
    Instant expiresAt,
    boolean keepsKeyOrder) {}
