package dev.postbox.runtime.jakarta.it;

import dev.postbox.runtime.api.EventHandler;
import dev.postbox.runtime.api.Handles;
import dev.postbox.spi.Envelope;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Runs in deferred mode (postbox.inbox.deferred=deferred): writes "key:payload"; the first two
 * attempts of every tenth event fail, so keys must wait for their retried head.
 */
@ApplicationScoped
@Handles(destination = "${it.deferred.topic}", group = "deferred")
public class DeferredHandler implements EventHandler {

  private static final Map<String, AtomicInteger> FAILS = new ConcurrentHashMap<>();

  @Inject Effects effects;

  @Override
  public void handle(Envelope event) throws Exception {
    String text = Effects.text(event);
    if (Integer.parseInt(text) % 10 == 3
        && FAILS.computeIfAbsent(event.id(), id -> new AtomicInteger()).incrementAndGet() <= 2) {
      throw new IllegalStateException("the first two attempts fail");
    }
    effects.write("deferred", event, event.key() + ":" + text);
  }
}
