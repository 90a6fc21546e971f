package dev.postbox.broker.artemis.testing;

import dev.postbox.spi.testing.OfferedTestBroker;
import dev.postbox.spi.testing.TestBroker;
import jakarta.jms.BytesMessage;
import jakarta.jms.Connection;
import jakarta.jms.MessageProducer;
import jakarta.jms.Session;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;

/** The Artemis test broker ({@link ArtemisTestBroker}) for tests that do not name adapters. */
public final class ArtemisTestBrokers implements TestBroker.Provider {

  @Override
  public String name() {
    return "artemis";
  }

  @Override
  public TestBroker shared() {
    return new Offered(this, ArtemisTestBroker.shared(), false);
  }

  @Override
  public TestBroker start() {
    return new Offered(this, ArtemisTestBroker.start(), true);
  }

  @Override
  public Map<String, String> unreachableConfig() {
    return Map.of("url", ArtemisTestBroker.unreachableUrl());
  }

  private static final class Offered extends OfferedTestBroker {
    private final ArtemisTestBroker artemis;

    Offered(Provider provider, ArtemisTestBroker artemis, boolean own) {
      super(provider, own);
      this.artemis = artemis;
    }

    @Override
    public Map<String, String> config() {
      return Map.of("url", artemis.url());
    }

    @Override
    public Map<String, String> republisherConfig() {
      // Artemis would drop the copies by their duplicate id before the inbox could see them.
      return Map.of("url", artemis.url(), "duplicate.detection", "false");
    }

    @Override
    public void createDestination(String name, int partitions) {
      // queues are created on first use
    }

    @Override
    public void sendRaw(String destination, Map<String, String> properties, String body)
        throws Exception {
      try (ActiveMQConnectionFactory factory = new ActiveMQConnectionFactory(artemis.url());
          Connection connection = factory.createConnection();
          Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
          MessageProducer producer = session.createProducer(session.createQueue(destination))) {
        BytesMessage message = session.createBytesMessage();
        message.writeBytes(body.getBytes(StandardCharsets.UTF_8));
        for (Map.Entry<String, String> p : properties.entrySet()) {
          message.setStringProperty(p.getKey(), p.getValue());
        }
        producer.send(message);
      }
    }

    @Override
    protected void restartOwn() {
      artemis.restart();
    }

    @Override
    protected void stopOwn() {
      artemis.stop();
    }

    @Override
    public void resume() {
      artemis.resume();
    }

    @Override
    protected void closeOwn() {
      artemis.close();
    }
  }
}
