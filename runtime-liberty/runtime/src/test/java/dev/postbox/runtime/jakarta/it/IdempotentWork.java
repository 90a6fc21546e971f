package dev.postbox.runtime.jakarta.it;

import dev.postbox.runtime.api.Outbox;
import dev.postbox.runtime.api.OutboxEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.transaction.Transactional;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/** Work for LibertyOutboxIT's @Idempotent endpoint: joining, or wrongly in a new transaction. */
@ApplicationScoped
public class IdempotentWork {

  @Inject Outbox outbox;

  @ConfigProperty(name = "it.topic")
  @Inject
  String topic;

  @Transactional
  public String recordOne() {
    return outbox.record(event(null));
  }

  @Transactional(Transactional.TxType.REQUIRES_NEW)
  public String recordOneInANewTransaction() {
    return outbox.record(event(null));
  }

  /** Records an event, then the same id again, and swallows the second failure. */
  @Transactional
  public String recordTwiceSwallowingTheFailure(String eventId) {
    outbox.record(event(eventId));
    try {
      outbox.record(event(eventId));
    } catch (RuntimeException swallowed) {
      return "swallowed: " + swallowed.getClass().getSimpleName();
    }
    return "no failure?!";
  }

  private OutboxEvent event(String id) {
    OutboxEvent.Builder b =
        OutboxEvent.builder()
            .destination(topic)
            .key("idem")
            .type("OrderCaptured")
            .source("urn:postbox:it")
            .json("{}");
    return id == null ? b.build() : b.eventId(id).build();
  }
}
