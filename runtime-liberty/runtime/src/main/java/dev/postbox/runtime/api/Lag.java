package dev.postbox.runtime.api;

import java.time.Instant;

/**
 * Undispatched outbox work: pending and failed counts, and when the oldest pending row was recorded
 * (null when none is pending).
 */
public record Lag(long pending, long failed, Instant oldestPending) {}
