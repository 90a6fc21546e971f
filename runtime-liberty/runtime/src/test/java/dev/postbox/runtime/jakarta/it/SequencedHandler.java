package dev.postbox.runtime.jakarta.it;

import dev.postbox.runtime.api.EventHandler;
import dev.postbox.runtime.api.Handles;
import dev.postbox.spi.Envelope;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

/**
 * A handler of a sequenced subscription ({@code postbox.inbox.sequenced}): fails every event whose
 * payload starts with "poison" until {@link #fixed}, and writes its payload as the effect's note,
 * so the order in which a key's events took effect can be read back.
 */
@ApplicationScoped
@Handles(destination = "${it.sequenced.topic}", group = "sequenced", types = "Charge")
public class SequencedHandler implements EventHandler {

  static volatile boolean fixed;

  @Inject Effects effects;

  @Override
  public void handle(Envelope event) throws Exception {
    String text = Effects.text(event);
    if (!fixed && text.startsWith("poison")) {
      throw new IllegalStateException("cannot charge " + text);
    }
    effects.write("sequenced", event, text);
  }
}
