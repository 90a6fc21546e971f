package dev.postbox.broker.kafka;

import dev.postbox.spi.Broker;
import dev.postbox.spi.Capabilities;
import dev.postbox.spi.Consumer;
import dev.postbox.spi.Publisher;
import dev.postbox.spi.RetriableBrokerException;
import dev.postbox.spi.Subscription;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.common.config.ConfigResource;

/** One Kafka connection: a shared idempotent producer and the consumers opened from it. */
final class KafkaBroker implements Broker {

  private final KafkaSettings settings;
  private final Capabilities capabilities;
  private final KafkaPublisher publisher;
  private final List<KafkaSubscriptionConsumer> consumers = new CopyOnWriteArrayList<>();
  private final AtomicBoolean closed = new AtomicBoolean();
  private final AtomicInteger consumerSequence = new AtomicInteger();
  private final java.util.Set<String> staticIds =
      java.util.concurrent.ConcurrentHashMap.newKeySet();

  /** Static ids another live consumer fenced us out of: rejoin dynamically. */
  private final java.util.Set<String> fencedIds =
      java.util.concurrent.ConcurrentHashMap.newKeySet();

  private Admin admin;

  private KafkaBroker(KafkaSettings settings) {
    this.settings = settings;
    this.capabilities = capabilities(settings);
    // The producer connects lazily; an unreachable cluster shows up as a retriable publish error.
    this.publisher = new KafkaPublisher(settings, capabilities, closed);
  }

  /** What a broker with these settings can do; constant for its life. */
  static Capabilities capabilities(KafkaSettings settings) {
    return Capabilities.builder()
        .perKeyOrdering(true)
        .delayedRedelivery(settings.maxNackDelay())
        .maxMessageBytes(settings.maxMessageBytes())
        .wireRules(KafkaWireRules.INSTANCE)
        .build();
  }

  static KafkaBroker open(KafkaSettings settings) {
    return new KafkaBroker(settings);
  }

  @Override
  public String name() {
    return KafkaBrokerProvider.NAME;
  }

  @Override
  public Capabilities capabilities() {
    return capabilities;
  }

  @Override
  public Publisher publisher() {
    checkOpen();
    return publisher;
  }

  @Override
  public Consumer subscribe(Subscription subscription) {
    checkOpen();
    String staticId = staticIdFor(subscription);
    KafkaSubscriptionConsumer consumer;
    try {
      consumer =
          new KafkaSubscriptionConsumer(
              settings,
              subscription,
              Integer.toString(consumerSequence.incrementAndGet()),
              staticId,
              c -> {
                if (c.staticId != null && fencedIds.add(c.staticId)) {
                  System.getLogger(KafkaBroker.class.getName())
                      .log(
                          System.Logger.Level.WARNING,
                          "Kafka group.instance.id '"
                              + c.staticId
                              + "' is used by another live consumer (two instances with one"
                              + " member name: set postbox.member-name per instance); this one"
                              + " rejoins as a dynamic member");
                }
              },
              c -> {
                consumers.remove(c);
                if (c.staticId != null) {
                  staticIds.remove(c.staticId);
                }
              });
    } catch (RuntimeException e) {
      if (staticId != null) {
        staticIds.remove(staticId);
      }
      throw e;
    }
    consumers.add(consumer);
    System.getLogger(KafkaBroker.class.getName())
        .log(
            System.Logger.Level.INFO,
            "Kafka consumer group '"
                + subscription.group()
                + "' on '"
                + subscription.destination()
                + "': without committed offsets (a new or renamed group, or expired offsets) it"
                + " starts at the "
                + settings.consumerProperties().get("auto.offset.reset")
                + " offset (kafka.consumer.auto.offset.reset); 'earliest' re-reads what the"
                + " topic still holds, and events older than the inbox dedup window are then"
                + " processed again");
    return consumer;
  }

  /**
   * Static membership: a subscription with a member name joins as {@code <member>/<group>/<topic>},
   * so the same instance, restarted after a crash, gets its partitions back at once instead of
   * after {@code session.timeout.ms}. A second consumer of the same subscription in this process (a
   * test, or a resubscription while the old consumer closes) joins as a dynamic member: two live
   * consumers must never share an id.
   */
  private String staticIdFor(Subscription subscription) {
    if (subscription.member() == null) {
      return null;
    }
    String id = staticId(subscription.member(), subscription.group(), subscription.destination());
    return !fencedIds.contains(id) && staticIds.add(id) ? id : null;
  }

  /**
   * A {@code group.instance.id} for the member's subscription: readable, in the characters Kafka
   * allows (letters, digits, '.', '_', '-'), and unique per (member, group, topic) through a hash
   * of the three as given.
   */
  static String staticId(String member, String group, String topic) {
    String raw = member + "\u0000" + group + "\u0000" + topic;
    String readable = (member + "." + group + "." + topic).replaceAll("[^A-Za-z0-9._-]", "_");
    if (readable.length() > 200) {
      readable = readable.substring(0, 200);
    }
    return readable + "-" + String.format("%08x", raw.hashCode());
  }

  @Override
  public void ping(Duration timeout) {
    checkOpen();
    try {
      admin()
          .describeCluster(new DescribeClusterOptions().timeoutMs(millis(timeout)))
          .clusterId()
          .get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new RetriableBrokerException("interrupted while pinging kafka", e);
    } catch (TimeoutException e) {
      throw new RetriableBrokerException("kafka did not answer within " + timeout, e);
    } catch (ExecutionException e) {
      throw new RetriableBrokerException(KafkaErrors.map("ping", e).getMessage(), e.getCause());
    }
  }

  /**
   * How far back a consumer group can be made to re-read: the topic's effective {@code
   * retention.ms} (its own, or the broker's {@code log.retention.*} default) plus its {@code
   * segment.ms}, since Kafka deletes whole segments only once their newest record is past the
   * retention, so a record can outlive {@code retention.ms} by up to a segment's span.
   */
  @Override
  public Optional<Duration> redeliveryHorizon(String destination) {
    checkOpen();
    ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, destination);
    try {
      Config config =
          admin()
              .describeConfigs(List.of(topic))
              .all()
              .get(settings.publishTimeout().toMillis(), TimeUnit.MILLISECONDS)
              .get(topic);
      ConfigEntry retention = config == null ? null : config.get("retention.ms");
      if (retention == null || retention.value() == null) {
        return Optional.empty();
      }
      long ms = Long.parseLong(retention.value());
      if (ms < 0) {
        return Optional.of(ChronoUnit.FOREVER.getDuration());
      }
      ConfigEntry segment = config.get("segment.ms");
      long segmentMs =
          segment == null || segment.value() == null
              ? 0
              : Math.max(0, Long.parseLong(segment.value()));
      return Optional.of(Duration.ofMillis(ms).plusMillis(segmentMs));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new RetriableBrokerException("interrupted while reading topic retention", e);
    } catch (ExecutionException | TimeoutException e) {
      throw new RetriableBrokerException(
          KafkaErrors.map("retention of " + destination, e).getMessage(), e);
    }
  }

  /** One admin client for pings and topic lookups, made on first use. */
  private synchronized Admin admin() {
    if (admin == null) {
      admin = Admin.create(settings.adminProperties());
    }
    return admin;
  }

  private static int millis(Duration d) {
    return (int) Math.min(Integer.MAX_VALUE, Math.max(1, d.toMillis()));
  }

  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    consumers.forEach(KafkaSubscriptionConsumer::close);
    publisher.closeProducer();
    synchronized (this) {
      if (admin != null) {
        admin.close(Duration.ofSeconds(5));
      }
    }
  }

  private void checkOpen() {
    if (closed.get()) {
      throw new IllegalStateException("kafka broker is closed");
    }
  }
}
