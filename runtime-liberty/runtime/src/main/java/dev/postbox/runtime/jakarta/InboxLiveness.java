package dev.postbox.runtime.jakarta;

import dev.postbox.runtime.Postbox;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.util.Set;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Liveness;

/**
 * Alive while every inbox consumer loop runs. Loops survive broker and database failures by backing
 * off; one that ended anyway (an error escaped it) never comes back without a restart, which is
 * what liveness is for. Broker or database outages belong to readiness, not here: a restart would
 * not cure them.
 */
@Liveness
@ApplicationScoped
public class InboxLiveness implements HealthCheck {

  @Inject PostboxRuntime runtime;

  @Override
  public HealthCheckResponse call() {
    Postbox postbox = runtime.started();
    Set<String> dead = postbox == null ? Set.of() : postbox.inboxEngine().deadLoops();
    var r = HealthCheckResponse.named("postbox-inbox-loops").status(dead.isEmpty());
    if (!dead.isEmpty()) {
      r.withData("ended", String.join(", ", dead));
    }
    return r.build();
  }
}
