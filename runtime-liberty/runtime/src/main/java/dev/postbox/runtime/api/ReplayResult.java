package dev.postbox.runtime.api;

/** What a bulk replay of dead letters did. */
public record ReplayResult(int replayed, int skippedAsDuplicates, int failed) {}
