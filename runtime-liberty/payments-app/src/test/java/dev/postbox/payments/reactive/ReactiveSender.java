package dev.postbox.payments.reactive;

import dev.postbox.reactive.OutgoingEvent;
import dev.postbox.runtime.api.Schedule;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Duration;
import java.util.concurrent.CompletionStage;
import org.eclipse.microprofile.reactive.messaging.Channel;
import org.eclipse.microprofile.reactive.messaging.Emitter;

/**
 * Test app code only: the emitter of the outgoing channel {@code rm-out}, as a CDI bean holds it.
 */
@ApplicationScoped
public class ReactiveSender {

  @Inject
  @Channel("rm-out")
  Emitter<String> emitter;

  /** Sends with a key, in whatever transaction the caller has; the stage tells how it ended. */
  public CompletionStage<Void> sendKeyed(String key, String payload) {
    return OutgoingEvent.key(key).send(emitter, payload);
  }

  /** Sends with a key and an id, due in an hour, expiring a day later. */
  public CompletionStage<Void> sendScheduled(String key, String eventId, String payload) {
    return OutgoingEvent.key(key)
        .withEventId(eventId)
        .withSchedule(
            Schedule.after(Duration.ofHours(1)).expiresAfter(Duration.ofDays(1)).inKeyOrder())
        .send(emitter, payload);
  }

  /** Sends the bare payload; the stage tells how it ended. */
  public CompletionStage<Void> send(String payload) {
    return emitter.send(payload);
  }
}
