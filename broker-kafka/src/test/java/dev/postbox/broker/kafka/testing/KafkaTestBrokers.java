package dev.postbox.broker.kafka.testing;

import dev.postbox.spi.testing.OfferedTestBroker;
import dev.postbox.spi.testing.TestBroker;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/** The Kafka test broker ({@link KafkaTestBroker}) for tests that do not name adapters. */
public final class KafkaTestBrokers implements TestBroker.Provider {

  @Override
  public String name() {
    return "kafka";
  }

  @Override
  public TestBroker shared() {
    return new Offered(this, KafkaTestBroker.shared(), false);
  }

  @Override
  public TestBroker start() {
    return new Offered(this, KafkaTestBroker.start(), true);
  }

  @Override
  public Map<String, String> unreachableConfig() {
    return Map.of("bootstrap.servers", KafkaTestBroker.unreachableBootstrapServers());
  }

  private static final class Offered extends OfferedTestBroker {
    private final KafkaTestBroker kafka;
    private KafkaProducer<byte[], byte[]> raw;

    Offered(Provider provider, KafkaTestBroker kafka, boolean own) {
      super(provider, own);
      this.kafka = kafka;
    }

    @Override
    public Map<String, String> config() {
      return Map.of("bootstrap.servers", kafka.bootstrapServers());
    }

    @Override
    public void createDestination(String name, int partitions) {
      kafka.createTopic(name, partitions);
    }

    @Override
    public synchronized void sendRaw(String destination, Map<String, String> headers, String body)
        throws Exception {
      if (raw == null) {
        raw =
            new KafkaProducer<>(
                Map.of(
                    ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers(),
                    ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class,
                    ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class));
      }
      ProducerRecord<byte[], byte[]> r =
          new ProducerRecord<>(destination, body.getBytes(StandardCharsets.UTF_8));
      headers.forEach((k, v) -> r.headers().add(k, v.getBytes(StandardCharsets.UTF_8)));
      raw.send(r).get();
    }

    @Override
    protected void restartOwn() {
      kafka.restart();
    }

    @Override
    protected void stopOwn() {
      kafka.stop();
    }

    @Override
    public void resume() {
      kafka.resume();
    }

    @Override
    protected synchronized void closeClients() {
      if (raw != null) {
        raw.close(java.time.Duration.ofSeconds(5));
        raw = null;
      }
    }

    @Override
    protected void closeOwn() {
      kafka.close();
    }
  }
}
