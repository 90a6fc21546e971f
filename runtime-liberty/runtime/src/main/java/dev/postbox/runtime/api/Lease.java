package dev.postbox.runtime.api;

import java.time.Instant;

/** One outbox partition's lease: who holds it and until when; owner null when never taken. */
public record Lease(int partition, String owner, Instant until) {}
