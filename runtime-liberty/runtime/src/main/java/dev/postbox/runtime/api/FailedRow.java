package dev.postbox.runtime.api;

import java.time.Instant;

/** An outbox row the relay gave up on. */
public record FailedRow(
    long id,
    String eventId,
    String destination,
    String key,
    String type,
    int attempts,
    String error,
    Instant createdAt) {}
