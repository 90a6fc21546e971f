package dev.postbox.broker.sqs;

import dev.postbox.spi.Broker;
import dev.postbox.spi.Capabilities;
import dev.postbox.spi.Consumer;
import dev.postbox.spi.PermanentBrokerException;
import dev.postbox.spi.Publisher;
import dev.postbox.spi.Subscription;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.SqsClientBuilder;
import software.amazon.awssdk.services.sqs.model.GetQueueUrlRequest;

/**
 * One SQS client, the shared publisher, and the consumers opened from it.
 *
 * <p>Capabilities belong to a broker, while FIFO-ness belongs to a queue, so one broker serves
 * either standard or FIFO queues ({@code fifo} in the configuration), and refuses the other kind.
 */
final class SqsBroker implements Broker {

  /** Room for attributes, so the payload limit holds whatever the headers. */
  static final int ATTRIBUTE_RESERVE_BYTES = 12 * 1024;

  private final SqsSettings settings;
  private final boolean fifo;
  private final SqsClient client;
  private final Capabilities capabilities;
  private final SqsPublisher publisher;
  private final Map<String, String> queueUrls = new ConcurrentHashMap<>();
  private final List<SqsSubscriptionConsumer> consumers = new CopyOnWriteArrayList<>();
  private final AtomicBoolean closed = new AtomicBoolean();

  SqsBroker(SqsSettings settings, boolean fifo, SqsClient client) {
    this.settings = settings;
    this.fifo = fifo;
    this.client = client;
    // The guaranteed payload size: a binary payload grows by a third in Base64.
    int payloadLimit = (settings.maxMessageBytes() - ATTRIBUTE_RESERVE_BYTES) / 4 * 3 - 8;
    Capabilities.Builder caps =
        Capabilities.builder()
            .perKeyOrdering(fifo)
            .delayedRedelivery(settings.maxNackDelay())
            .maxMessageBytes(payloadLimit)
            .wireRules(new SqsWireRules(fifo, settings.maxMessageBytes()));
    if (fifo) {
      caps.nativeDeduplication(Duration.ofMinutes(5));
    }
    this.capabilities = caps.build();
    this.publisher = new SqsPublisher(this, settings, fifo);
  }

  static SqsBroker open(SqsSettings settings) {
    return new SqsBroker(settings, settings.fifo(), client(settings));
  }

  static SqsClient client(SqsSettings settings) {
    SqsClientBuilder b = SqsClient.builder();
    if (settings.region() != null) {
      b.region(Region.of(settings.region()));
    } else if (settings.endpoint() != null) {
      b.region(Region.US_EAST_1); // SQS-compatible servers ignore it; the SDK needs one
    }
    if (settings.endpoint() != null) {
      b.endpointOverride(settings.endpoint());
    }
    if (settings.accessKeyId() != null) {
      b.credentialsProvider(
          StaticCredentialsProvider.create(
              AwsBasicCredentials.create(settings.accessKeyId(), settings.secretAccessKey())));
    }
    b.overrideConfiguration(o -> o.apiCallTimeout(settings.publishTimeout()));
    return b.build();
  }

  /** The queue URL of a destination: a URL as given, or a name looked up once. */
  String queueUrl(String destination) {
    if (destination == null || destination.isBlank()) {
      throw new IllegalArgumentException("destination must not be blank");
    }
    if (destination.endsWith(".fifo") != fifo) {
      throw new PermanentBrokerException(
          "queue '"
              + destination
              + "' is "
              + (fifo ? "not " : "")
              + "a FIFO queue, but this broker is configured with fifo="
              + fifo
              + "; open another broker for it");
    }
    if (destination.startsWith("https://") || destination.startsWith("http://")) {
      return destination;
    }
    return queueUrls.computeIfAbsent(
        destination,
        name -> {
          try {
            return client
                .getQueueUrl(GetQueueUrlRequest.builder().queueName(name).build())
                .queueUrl();
          } catch (RuntimeException e) {
            throw SqsErrors.map("look up queue " + name, e);
          }
        });
  }

  SqsClient client() {
    return client;
  }

  /** Lists at most one queue: the cheapest call that needs the service and the credentials. */
  @Override
  public void ping(java.time.Duration timeout) {
    checkOpen();
    try {
      client.listQueues(
          software.amazon.awssdk.services.sqs.model.ListQueuesRequest.builder()
              .maxResults(1)
              .overrideConfiguration(o -> o.apiCallTimeout(timeout))
              .build());
    } catch (RuntimeException e) {
      throw new dev.postbox.spi.RetriableBrokerException(
          "sqs did not answer: " + SqsErrors.map("ping", e).getMessage(), e);
    }
  }

  /** The queue's {@code MessageRetentionPeriod}. */
  @Override
  public java.util.Optional<java.time.Duration> redeliveryHorizon(String destination) {
    checkOpen();
    String url = queueUrl(destination);
    try {
      String seconds =
          client
              .getQueueAttributes(
                  software.amazon.awssdk.services.sqs.model.GetQueueAttributesRequest.builder()
                      .queueUrl(url)
                      .attributeNames(
                          software.amazon.awssdk.services.sqs.model.QueueAttributeName
                              .MESSAGE_RETENTION_PERIOD)
                      .build())
              .attributes()
              .get(
                  software.amazon.awssdk.services.sqs.model.QueueAttributeName
                      .MESSAGE_RETENTION_PERIOD);
      return seconds == null
          ? java.util.Optional.empty()
          : java.util.Optional.of(java.time.Duration.ofSeconds(Long.parseLong(seconds)));
    } catch (RuntimeException e) {
      throw SqsErrors.map("retention of " + destination, e);
    }
  }

  boolean isClosed() {
    return closed.get();
  }

  @Override
  public String name() {
    return SqsBrokerProvider.NAME;
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
    SqsSubscriptionConsumer consumer =
        new SqsSubscriptionConsumer(
            this, settings, subscription, queueUrl(subscription.destination()), consumers::remove);
    consumers.add(consumer);
    return consumer;
  }

  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    consumers.forEach(SqsSubscriptionConsumer::close);
    client.close();
  }

  private void checkOpen() {
    if (closed.get()) {
      throw new IllegalStateException("sqs broker is closed");
    }
  }
}
