package dev.postbox.runtime.inbox;

import dev.postbox.runtime.api.DeadLetterReason;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;
import java.util.Map;

/**
 * A delivery no retry can fix, with what its dead letter stores: the {@link Classifier} finds it
 * before any transaction, or a handler declares it, and the {@link FailurePolicy} stores it.
 *
 * @param envelope the decoded event, or null when it could not be decoded
 * @param headers the raw headers of an event that could not be decoded
 * @param payload the raw payload of an event that could not be decoded, or null
 */
record Poison(
    Delivery delivery,
    Envelope envelope,
    DeadLetterReason reason,
    String why,
    Map<String, String> headers,
    byte[] payload) {}
