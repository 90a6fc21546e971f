package dev.postbox.broker.artemis;

import dev.postbox.spi.InvalidEventException;
import dev.postbox.spi.WireRules;

/**
 * What the Artemis adapter refuses beyond the envelope's own rules.
 *
 * <ul>
 *   <li>A destination whose name, after {@code topic:} or {@code queue:}, is empty, or holds
 *       Artemis's wildcard characters {@code #} or {@code *}: a send to a wildcard address would
 *       reach every matching address.
 *   <li>JMS property names need no rule: every header name is lower-case ASCII letters and digits
 *       (the envelope's rule) and travels as {@code ce_<name>}, or as {@code traceparent} and
 *       {@code tracestate}; all are legal JMS identifiers and none is a reserved word. String
 *       properties carry every value the envelope allows unchanged.
 * </ul>
 */
final class ArtemisWireRules implements WireRules {

  static final ArtemisWireRules INSTANCE = new ArtemisWireRules();

  private ArtemisWireRules() {}

  @Override
  public void checkDestination(String destination) {
    String name = ArtemisBroker.addressName(destination);
    if (name.isBlank()) {
      throw new InvalidEventException(
          "destination", "names no queue or topic after its prefix: '" + destination + "'");
    }
    if (name.indexOf('#') >= 0 || name.indexOf('*') >= 0) {
      throw new InvalidEventException(
          "destination",
          "holds an Artemis wildcard character ('#' or '*'): a send would reach every matching"
              + " address");
    }
  }
}
