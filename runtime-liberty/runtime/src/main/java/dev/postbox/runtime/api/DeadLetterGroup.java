package dev.postbox.runtime.api;

import java.time.Instant;

/**
 * Open dead letters of one subscription that failed the same way: the same {@link DeadLetterReason}
 * and the same error class (the Java class name the stored error starts with, as handler failures
 * are stored: {@code class: message}; null when the error does not start with one, as for letters
 * the inbox refused before any handler ran). One cause usually makes a group, so it is fixed, then
 * replayed or discarded, as one.
 *
 * @param count open letters in the group
 * @param firstId the oldest letter's id
 * @param lastId the newest letter's id: pass it as {@code throughId} to act on the letters seen
 *     here and not on any that joined the group since
 * @param sampleError the newest letter's error, as an example
 */
public record DeadLetterGroup(
    String subscription,
    DeadLetterReason reason,
    String errorClass,
    long count,
    long firstId,
    long lastId,
    Instant oldest,
    Instant newest,
    String sampleError) {}
