package dev.postbox.broker.sqs.testing;

import dev.postbox.spi.testing.OfferedTestBroker;
import dev.postbox.spi.testing.TestBroker;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;
import software.amazon.awssdk.services.sqs.model.SendMessageRequest;

/**
 * ElasticMQ standing in for SQS ({@link ElasticMqTestBroker}), for tests that do not name adapters:
 * {@code sqs} with standard queues, and {@link Fifo sqs-fifo} with FIFO queues.
 *
 * <p>SQS itself never restarts; what its clients meet is an endpoint that goes away. A standard
 * broker of a test's own keeps its messages in a database and restarts. A FIFO one stays up, in
 * memory, and its restart takes its endpoint away for five seconds (connections reset, new ones
 * refused), because ElasticMQ's restart forgets FIFO group locks ({@code ElasticMqFifoStandInIT}).
 */
public class ElasticMqTestBrokers implements TestBroker.Provider {

  /** How long a FIFO broker's endpoint is away on a restart. */
  static final Duration OUTAGE = Duration.ofSeconds(5);

  @Override
  public String name() {
    return "sqs";
  }

  @Override
  public String adapter() {
    return "sqs";
  }

  @Override
  public boolean ordered() {
    return false;
  }

  @Override
  public TestBroker shared() {
    return new Offered(this, ElasticMqTestBroker.shared(), null, false);
  }

  @Override
  public TestBroker start() {
    try {
      Path storage = Files.createTempDirectory("elasticmq-test-broker");
      return new Offered(this, ElasticMqTestBroker.persistent(storage), storage, true);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public Map<String, String> unreachableConfig() {
    return Map.of(
        "endpoint", ElasticMqTestBroker.unreachableEndpoint(),
        "access.key.id", ElasticMqTestBroker.ACCESS_KEY,
        "secret.access.key", ElasticMqTestBroker.SECRET_KEY);
  }

  /** FIFO queues: message groups by key, so order per key is promised. */
  public static final class Fifo extends ElasticMqTestBrokers {
    @Override
    public String name() {
      return "sqs-fifo";
    }

    @Override
    public boolean ordered() {
      return true;
    }

    @Override
    public boolean dropsCopies() {
      return true; // a FIFO queue drops a copy sent within 5 minutes, by its deduplication id
    }

    @Override
    public String destinationSuffix() {
      return ".fifo";
    }

    @Override
    public TestBroker start() {
      return new Offered(this, ElasticMqTestBroker.withOutages(), null, true);
    }

    @Override
    public Map<String, String> unreachableConfig() {
      Map<String, String> c = new LinkedHashMap<>(super.unreachableConfig());
      c.put("fifo", "true");
      return c;
    }
  }

  private static final class Offered extends OfferedTestBroker {
    private final ElasticMqTestBroker sqs;
    private final Path storage;

    Offered(ElasticMqTestBrokers provider, ElasticMqTestBroker sqs, Path storage, boolean own) {
      super(provider, own);
      this.sqs = sqs;
      this.storage = storage;
    }

    private boolean fifo() {
      return provider() instanceof Fifo;
    }

    @Override
    public Map<String, String> config() {
      return fifo() ? sqs.config("fifo", "true") : sqs.config();
    }

    @Override
    public void createDestination(String name, int partitions) {
      sqs.createQueue(name);
    }

    @Override
    public void sendRaw(String destination, Map<String, String> attributes, String body) {
      String url = sqs.client().getQueueUrl(b -> b.queueName(destination)).queueUrl();
      Map<String, MessageAttributeValue> a = new LinkedHashMap<>();
      attributes.forEach(
          (k, v) ->
              a.put(k, MessageAttributeValue.builder().dataType("String").stringValue(v).build()));
      SendMessageRequest.Builder send =
          SendMessageRequest.builder().queueUrl(url).messageBody(body).messageAttributes(a);
      if (fifo()) {
        send.messageGroupId("raw").messageDeduplicationId(UUID.randomUUID().toString());
      }
      sqs.client().sendMessage(send.build());
    }

    @Override
    public int maxRawHeaders() {
      return 10; // SQS carries at most 10 message attributes
    }

    @Override
    protected void restartOwn() {
      if (fifo()) {
        sqs.outage(OUTAGE);
      } else {
        sqs.restart();
      }
    }

    @Override
    public String restartLabel() {
      return fifo() ? "SQS endpoint outage of " + OUTAGE.toSeconds() + " s" : "broker restart";
    }

    @Override
    protected void stopOwn() {
      if (fifo()) {
        sqs.endpointDown();
      } else {
        sqs.stop();
      }
    }

    @Override
    public void resume() {
      if (fifo()) {
        sqs.endpointUp();
      } else {
        sqs.resume();
      }
    }

    @Override
    protected void closeOwn() {
      sqs.close();
      if (storage != null) {
        try (Stream<Path> files = Files.walk(storage)) {
          for (Path f : (Iterable<Path>) files.sorted(Comparator.reverseOrder())::iterator) {
            Files.delete(f);
          }
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      }
    }
  }
}
