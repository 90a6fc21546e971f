package dev.postbox.runtime.jakarta;

import dev.postbox.runtime.Postbox;
import dev.postbox.runtime.inbox.InboxHealth;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.util.LinkedHashMap;
import java.util.Map;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

/**
 * Ready while the broker answers a ping, the database answers a query, and no subscription's loop
 * has failed (its polls, or its batches) without a break for 30 seconds, as last read by the inbox
 * engine (every 5 seconds). The last matters because a ping opens a fresh connection: it can
 * succeed while a consumer's own connection is dead. An adapter that cannot ping reports the broker
 * as unknown, which does not count against readiness. Also shows each deferred subscription's queue
 * depth, and each sequenced subscription's parked keys (keys that wait behind an open dead letter
 * for an operator; they do not make the instance unready).
 */
@Readiness
@ApplicationScoped
public class InboxReadiness implements HealthCheck {

  @Inject PostboxRuntime runtime;

  @Override
  public HealthCheckResponse call() {
    Postbox postbox = runtime.started();
    Verdict v = judge(postbox == null ? InboxHealth.NOT_CHECKED : postbox.inboxEngine().health());
    var r = HealthCheckResponse.named("postbox-inbox").status(v.up());
    HealthErrors.redactDown("postbox-inbox", v.data()).forEach(r::withData);
    return r.build();
  }

  /** The readiness decision, apart from the MicroProfile types so it can be tested alone. */
  record Verdict(boolean up, Map<String, String> data) {}

  static Verdict judge(InboxHealth reading) {
    Map<String, String> data = new LinkedHashMap<>();
    boolean brokerOk = !Boolean.FALSE.equals(reading.brokerUp());
    data.put(
        "broker",
        reading.brokerUp() == null
            ? (reading.brokerError() != null ? "not checked yet" : "unknown")
            : reading.brokerUp() ? "UP" : "DOWN: " + reading.brokerError());
    data.put(
        "database", reading.databaseError() == null ? "UP" : "DOWN: " + reading.databaseError());
    reading.deferredDepths().forEach((s, depth) -> data.put("deferred " + s, depth.toString()));
    reading.failingLoops().forEach((s, why) -> data.put("consumer " + s, "DOWN: " + why));
    // What waits for an operator: shown, never a reason to take the instance out of service.
    reading
        .openLetters()
        .forEach(
            (s, n) -> {
              if (n.parkedKeys() > 0) {
                data.put(
                    "parked keys " + s,
                    n.parkedKeys()
                        + " keys wait behind an open dead letter ("
                        + n.parked()
                        + " events)");
              }
            });
    boolean checked = reading.brokerUp() != null || reading.brokerError() == null;
    return new Verdict(
        checked && brokerOk && reading.databaseError() == null && reading.failingLoops().isEmpty(),
        data);
  }
}
