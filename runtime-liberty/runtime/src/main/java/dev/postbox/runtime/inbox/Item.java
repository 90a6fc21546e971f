package dev.postbox.runtime.inbox;

import dev.postbox.runtime.dedup.DedupFront;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;

/**
 * A delivery with its decoded envelope and, when the front is on, its front key: the id's two
 * halves, the low one mixed with the payload's hash. Computed once here (the payload is copied and
 * hashed), read when the front is asked and again when the outcome is recorded.
 */
final class Item {
  final Tracked delivery;
  final Envelope envelope;
  final long frontHigh;
  final long frontLow;

  Item(Delivery delivery, Envelope envelope, boolean keyed) {
    this.delivery = Tracked.of(delivery);
    this.envelope = envelope;
    this.frontHigh = keyed ? DedupFront.high(envelope.id()) : 0;
    this.frontLow = keyed ? DedupFront.low(envelope.id()) ^ DedupFront.hash(envelope.payload()) : 0;
  }
}
