package dev.postbox.spi.testing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.spi.Capabilities;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.InvalidEventException;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.statistics.Statistics;

/**
 * The wire round trip, property-based: for arbitrary ids, keys, types, subjects, content types,
 * header maps, payloads and times, either the event is refused by the one check that recording
 * applies ({@link Envelope}'s rules, then the broker's {@link Capabilities#check}), or it crosses
 * the adapter's wire format and comes back exactly equal, as an {@link Envelope}, which is what the
 * inbox's classifier decodes.
 *
 * <p>The generators lean towards what broke before: NUL and other control characters, unpaired
 * surrogates, the non-characters U+FFFE and U+FFFF, characters that need escaping on some wire
 * ({@code & = % + #}), non-ASCII and supplementary characters, header maps near the size limits,
 * payloads near the broker's limit, and times at the edges of the years 1 to 9999.
 *
 * <p>An adapter runs it through a short subclass that encodes and decodes with its own wire format
 * (with or without the broker). The property is {@code final}; {@link #capabilities()} and {@link
 * #destination()} are the adapter's own.
 */
public abstract class WireRoundTripProperties {

  /** The adapter's capabilities, whose {@link Capabilities#check} recording applies. */
  protected abstract Capabilities capabilities();

  /** A destination the adapter publishes to. */
  protected abstract String destination();

  /**
   * Encodes the envelope into the adapter's wire form and decodes it back, as a consumer of the
   * destination would.
   */
  protected abstract Envelope roundTrip(String destination, Envelope envelope) throws Exception;

  @Provide
  Arbitrary<HostileEvents.RawEvent> events() {
    return HostileEvents.events(capabilities().maxMessageBytes());
  }

  @Property(tries = 1500)
  public final void anEventIsRefusedWhenRecordedOrCrossesTheWireUnchanged(
      @ForAll("events") HostileEvents.RawEvent raw) throws Exception {
    Envelope e;
    try {
      e = raw.toEnvelope();
      capabilities().check(destination(), e);
    } catch (InvalidEventException refused) {
      Statistics.collect("refused");
      return;
    }
    Statistics.collect("carried");
    Envelope back = roundTrip(destination(), e);
    assertThat(back.id()).as("id").isEqualTo(raw.id());
    assertThat(back.type()).as("type").isEqualTo(raw.type());
    assertThat(back.subject()).as("subject").isEqualTo(raw.subject());
    assertThat(back.key()).as("key").isEqualTo(raw.key());
    assertThat(back.dataContentType()).as("datacontenttype").isEqualTo(raw.contentType());
    assertThat(back.time()).as("time").isEqualTo(raw.time());
    assertThat(back.headers()).as("headers").isEqualTo(raw.headers());
    assertThat(back.payload()).as("payload").isEqualTo(raw.payload());
    assertThat(back).as("what came back over the wire").isEqualTo(e);
    Statistics.coverage(
        c -> {
          c.check("carried").percentage(p -> p >= 10);
          c.check("refused").percentage(p -> p >= 10);
        });
  }

  /**
   * A round trip through a real broker: publishes with the adapter's publisher, then polls the
   * consumer (subscribed to the destination before) until an equal event arrives, acknowledging
   * what it reads; a copy left by an earlier try with the same id is read and dropped. When none
   * equal arrives within 15 s, the last one with the event's id is returned, for the property to
   * name what differs. A {@link dev.postbox.spi.MalformedMessageException} on reading fails the
   * property: the inbox would dead-letter such an event.
   */
  protected static Envelope publishAndReceive(
      dev.postbox.spi.Broker broker,
      dev.postbox.spi.Consumer consumer,
      String destination,
      Envelope e) {
    broker.publisher().publish(destination, e);
    Envelope sameId = null;
    long deadline = System.nanoTime() + java.time.Duration.ofSeconds(15).toNanos();
    while (System.nanoTime() < deadline) {
      for (dev.postbox.spi.Delivery d : consumer.poll(16, java.time.Duration.ofMillis(200))) {
        Envelope got = d.envelope();
        d.ack();
        if (got.equals(e)) {
          return got;
        }
        sameId = got.id().equals(e.id()) ? got : sameId;
      }
    }
    if (sameId != null) {
      return sameId;
    }
    throw new AssertionError("event " + e.id() + " did not come back within 15 s");
  }
}
