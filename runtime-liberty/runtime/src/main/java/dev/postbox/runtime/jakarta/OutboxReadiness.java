package dev.postbox.runtime.jakarta;

import dev.postbox.runtime.outbox.OutboxRepository;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

/**
 * Ready while the outbox table answers and the oldest pending event is younger than {@code
 * postbox.lag.threshold}. FAILED rows are reported, not held against readiness: they wait for an
 * operator, and taking the application out of service would not help them.
 */
@Readiness
@ApplicationScoped
public class OutboxReadiness implements HealthCheck {

  @Inject PostboxRuntime runtime;

  @Override
  public HealthCheckResponse call() {
    var r = HealthCheckResponse.named("postbox-outbox");
    String error = runtime.lagError();
    OutboxRepository.Lag lag = runtime.lag();
    if (error != null || lag == null) {
      return r.down().withData("error", String.valueOf(error)).build();
    }
    double age = runtime.oldestPendingAgeSeconds();
    boolean up = age <= runtime.lagThreshold().toSeconds();
    return r.status(up)
        .withData("pending", lag.pending())
        .withData("failed", lag.failed())
        .withData("oldestPendingAgeSeconds", (long) age)
        .withData("thresholdSeconds", runtime.lagThreshold().toSeconds())
        .build();
  }
}
