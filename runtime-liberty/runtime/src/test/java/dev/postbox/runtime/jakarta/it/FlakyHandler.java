package dev.postbox.runtime.jakarta.it;

import dev.postbox.runtime.api.EventHandler;
import dev.postbox.runtime.api.Handles;
import dev.postbox.runtime.api.Outbox;
import dev.postbox.runtime.api.OutboxEvent;
import dev.postbox.spi.Envelope;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * Records a follow-up outbox event, then fails the first two attempts of every event, then
 * succeeds; while {@link #broken} is set, fails every attempt (the "bug" that a later fix and
 * replay repair).
 */
@ApplicationScoped
@Handles(destination = "${it.flaky.topic}", group = "flaky", types = "Charge")
public class FlakyHandler implements EventHandler {

  static volatile boolean broken;
  static final Map<String, AtomicInteger> CALLS = new ConcurrentHashMap<>();

  @Inject Effects effects;

  @Inject Outbox outbox;

  @ConfigProperty(name = "it.topic")
  @Inject
  String followUpTopic;

  @Override
  public void handle(Envelope event) throws Exception {
    effects.write("flaky", event, "written, then rolled back when the handler fails");
    // The consumer-side outbox: a follow-up event in the same transaction as the inbox record.
    outbox.record(
        OutboxEvent.builder()
            .destination(followUpTopic)
            .key(event.key())
            .type("ChargeRecorded")
            .source("urn:postbox:it")
            .json("{\"for\":\"" + event.id() + "\"}")
            .build());
    int call = CALLS.computeIfAbsent(event.id(), id -> new AtomicInteger()).incrementAndGet();
    if (broken && Effects.text(event).startsWith("bug")) {
      throw new IllegalStateException("bug #42 on call " + call);
    }
    if (Effects.text(event).startsWith("flaky") && call <= 2) {
      throw new IllegalStateException("transient failure on call " + call);
    }
  }
}
