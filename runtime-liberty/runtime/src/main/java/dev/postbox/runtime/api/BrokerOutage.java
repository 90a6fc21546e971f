package dev.postbox.runtime.api;

import java.time.Instant;

/**
 * A destination the broker does not serve now, as this instance's relay sees it.
 *
 * @param destination the topic or queue
 * @param since the first failed publish of this outage
 * @param failedTries publishes that failed since then
 * @param lastError the last one's error
 */
public record BrokerOutage(String destination, Instant since, int failedTries, String lastError) {}
