package dev.postbox.runtime.jakarta;

import dev.postbox.runtime.outbox.OutboxRepository;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Duration;
import java.util.LinkedHashMap;
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
 */
@Readiness
@ApplicationScoped
public class OutboxReadiness implements HealthCheck {

  @Inject PostboxRuntime runtime;

  @Override
  public HealthCheckResponse call() {
    String lagError = runtime.lagError(); // read once: the refresh may change it meanwhile
    Verdict v =
        judge(lagError, runtime.lag(), runtime.oldestPendingAgeSeconds(), runtime.lagThreshold());
    if (runtime.durability() != null) {
      v.data().put("durability", runtime.durability().describe());
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

  static Verdict judge(
      String error, OutboxRepository.Lag lag, double oldestPendingAgeSeconds, Duration threshold) {
    Map<String, String> data = new LinkedHashMap<>();
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
    return new Verdict(oldestPendingAgeSeconds <= threshold.toSeconds(), data);
  }
}
