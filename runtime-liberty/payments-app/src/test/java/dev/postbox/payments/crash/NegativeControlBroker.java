package dev.postbox.payments.crash;

import dev.postbox.spi.Broker;
import dev.postbox.spi.BrokerProvider;
import dev.postbox.spi.Brokers;
import dev.postbox.spi.Capabilities;
import dev.postbox.spi.ConfigException;
import dev.postbox.spi.Consumer;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.Publisher;
import dev.postbox.spi.Subscription;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The crash harness's negative controls: a broker adapter, in test code only, that wraps a real one
 * and breaks one of the promises the inbox relies on, so the harness can show it would notice. It
 * ships in the same test jar as {@link CrashPoints}, never in the WAR as built.
 *
 * <p>Selected as {@code postbox.broker=negative-control}, with {@code negative-control.delegate}
 * the real adapter's name and {@code negative-control.mode} one of:
 *
 * <ul>
 *   <li>{@code ack-on-poll}: every delivery is acknowledged as it is polled, before the inbox's
 *       transaction commits; the inbox's own ack and nack then change nothing. A crash before the
 *       commit loses the events the transaction held.
 *   <li>{@code fresh-ids}: every delivery carries a new event id, so a redelivered or republished
 *       copy looks new to the inbox's deduplication and runs the handler again.
 *   <li>{@code no-keys}: every delivery loses its key, so the inbox spreads a customer's events
 *       over its lanes by id and runs them side by side, out of the order they were placed.
 * </ul>
 *
 * The other keys go to the real adapter. Publishing is the real adapter's, untouched.
 */
public final class NegativeControlBroker implements BrokerProvider {

  static final String DELEGATE = "negative-control.delegate";
  static final String MODE = "negative-control.mode";

  /** How the deliveries are broken. */
  enum Mode {
    ACK_ON_POLL,
    FRESH_IDS,
    NO_KEYS;

    static Mode of(String value) {
      return switch (value == null ? "" : value) {
        case "ack-on-poll" -> ACK_ON_POLL;
        case "fresh-ids" -> FRESH_IDS;
        case "no-keys" -> NO_KEYS;
        default ->
            throw new ConfigException(
                MODE, "must be ack-on-poll, fresh-ids or no-keys, was '" + value + "'");
      };
    }
  }

  @Override
  public String name() {
    return "negative-control";
  }

  @Override
  public Broker open(Map<String, String> config) {
    Mode mode = Mode.of(config.get(MODE));
    String delegate = config.get(DELEGATE);
    if (delegate == null || delegate.isBlank()) {
      throw new ConfigException(DELEGATE, "names the real broker adapter; it is missing");
    }
    Map<String, String> rest = new HashMap<>(config);
    rest.remove(MODE);
    rest.remove(DELEGATE);
    return wrap(Brokers.open(delegate, rest), mode);
  }

  /** The broker, with its deliveries broken as the mode says. */
  static Broker wrap(Broker real, Mode mode) {
    return new Broker() {
      @Override
      public String name() {
        return real.name();
      }

      @Override
      public Capabilities capabilities() {
        return real.capabilities();
      }

      @Override
      public Publisher publisher() {
        return real.publisher();
      }

      @Override
      public Consumer subscribe(Subscription subscription) {
        Consumer consumer = real.subscribe(subscription);
        return new Consumer() {
          @Override
          public List<Delivery> poll(int maxDeliveries, Duration timeout) {
            return consumer.poll(maxDeliveries, timeout).stream()
                .map(d -> broken(d, mode))
                .toList();
          }

          @Override
          public Subscription subscription() {
            return consumer.subscription();
          }

          @Override
          public void close() {
            consumer.close();
          }
        };
      }

      @Override
      public void ping(Duration timeout) {
        real.ping(timeout);
      }

      @Override
      public java.util.Optional<Duration> redeliveryHorizon(String destination) {
        return real.redeliveryHorizon(destination);
      }

      @Override
      public void close() {
        real.close();
      }
    };
  }

  static Delivery broken(Delivery d, Mode mode) {
    if (mode == Mode.ACK_ON_POLL) {
      d.ack();
    }
    return new Delivery() {
      private final String fresh = UUID.randomUUID().toString();

      @Override
      public Envelope envelope() {
        Envelope e = d.envelope();
        return switch (mode) {
          case ACK_ON_POLL -> e;
          case FRESH_IDS -> e.toBuilder().id(fresh).build();
          case NO_KEYS -> e.toBuilder().key(null).build();
        };
      }

      @Override
      public int attempt() {
        return d.attempt();
      }

      @Override
      public Map<String, String> metadata() {
        return d.metadata();
      }

      @Override
      public void ack() {
        if (mode != Mode.ACK_ON_POLL) {
          d.ack();
        }
      }

      @Override
      public void nack(Duration delay) {
        if (mode != Mode.ACK_ON_POLL) {
          d.nack(delay);
        }
      }
    };
  }
}
