package dev.postbox.runtime.jakarta;

import dev.postbox.runtime.Postbox;
import dev.postbox.runtime.api.BrokerOutage;
import dev.postbox.runtime.api.Lag;
import dev.postbox.runtime.relay.OutboxEngine;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

/**
 * Ready while the outbox table answers and the oldest pending event is younger than {@code
 * postbox.lag.threshold}, and not older than that into the future (a negative age means clocks or
 * time zones disagree, and such a row would wait unpublished). FAILED rows are reported, not held
 * against readiness: they wait for an operator, and taking the application out of service would not
 * help them.
 *
 * <p>A broker outage is reported apart from lag ({@code broker}: {@code available}, or the
 * destinations that are out, since when), and lag that an outage explains does not take readiness
 * down: the application still records events, which is what the outbox is for, and every instance
 * shares the same broker, so taking them out of service would stop the requests for nothing.
 */
@Readiness
@ApplicationScoped
public class OutboxReadiness implements HealthCheck {

  @Inject PostboxRuntime runtime;

  @Override
  public HealthCheckResponse call() {
    Postbox postbox = runtime.started();
    OutboxEngine outbox = postbox == null ? null : postbox.outboxEngine();
    // read once: the refresh may change it meanwhile
    String lagError = outbox == null ? "not started" : outbox.lagError();
    Verdict v =
        outbox == null
            ? judge(lagError, null, 0, Duration.ZERO)
            : judge(
                lagError,
                outbox.cachedLag(),
                outbox.oldestPendingAgeSeconds(),
                postbox.settings().lagThreshold(),
                outbox.brokerOutages());
    if (postbox != null) {
      v.data().put("durability", postbox.durability().describe());
    }
    var r = HealthCheckResponse.named("postbox-outbox").status(v.up());
    v.data()
        .forEach(
            (k, value) ->
                r.withData(
                    k,
                    k.equals("error") && lagError != null
                        ? HealthErrors.redact("postbox-outbox", value)
                        : value));
    return r.build();
  }

  /** The readiness decision, apart from the MicroProfile types so it can be tested alone. */
  record Verdict(boolean up, Map<String, String> data) {}

  static Verdict judge(String error, Lag lag, double oldestPendingAgeSeconds, Duration threshold) {
    return judge(error, lag, oldestPendingAgeSeconds, threshold, List.of());
  }

  static Verdict judge(
      String error,
      Lag lag,
      double oldestPendingAgeSeconds,
      Duration threshold,
      List<BrokerOutage> outages) {
    Map<String, String> data = new LinkedHashMap<>();
    data.put("broker", outages.isEmpty() ? "available" : "unavailable");
    for (BrokerOutage o : outages) {
      data.put(
          "broker unavailable: " + o.destination(),
          "since " + o.since() + " (" + o.failedTries() + " failed tries)");
    }
    if (error != null || lag == null) {
      data.put("error", String.valueOf(error));
      return new Verdict(false, data);
    }
    data.put("pending", Long.toString(lag.pending()));
    data.put("failed", Long.toString(lag.failed()));
    data.put("oldestPendingAgeSeconds", Long.toString((long) oldestPendingAgeSeconds));
    data.put("thresholdSeconds", Long.toString(threshold.toSeconds()));
    if (oldestPendingAgeSeconds < -threshold.toSeconds()) {
      // A row "created" in the future waits that long before anyone publishes it: clocks that
      // disagree, or a timestamp written in a local time zone and read as UTC.
      data.put(
          "error",
          "the oldest pending event was created "
              + (long) -oldestPendingAgeSeconds
              + " s in the future: the instances' clocks disagree, or timestamps are written in a"
              + " local time zone");
      return new Verdict(false, data);
    }
    if (oldestPendingAgeSeconds > threshold.toSeconds() && !outages.isEmpty()) {
      data.put("lagCause", "broker unavailable: events are recorded and wait for it");
      return new Verdict(true, data);
    }
    return new Verdict(oldestPendingAgeSeconds <= threshold.toSeconds(), data);
  }
}
