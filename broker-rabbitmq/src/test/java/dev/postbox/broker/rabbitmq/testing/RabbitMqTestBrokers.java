package dev.postbox.broker.rabbitmq.testing;

import dev.postbox.spi.testing.OfferedTestBroker;
import dev.postbox.spi.testing.TestBroker;
import java.util.Map;

/**
 * The local RabbitMQ server ({@link LocalRabbitMq}) for tests that do not name adapters: the shared
 * broker is a vhost for the JVM, one of the test's own a vhost of its own, removed when closed.
 */
public final class RabbitMqTestBrokers implements TestBroker.Provider {

  /** Shards as the adapter's default, for raw messages and destinations made ahead. */
  static final int SHARDS = 4;

  private static String sharedVhost;

  @Override
  public String name() {
    return "rabbitmq";
  }

  @Override
  public synchronized TestBroker shared() {
    if (sharedVhost == null) {
      String vhost = LocalRabbitMq.newVhost("postbox-shared");
      Runtime.getRuntime()
          .addShutdownHook(
              new Thread(() -> LocalRabbitMq.deleteVhost(vhost), "rabbitmq-vhost-cleanup"));
      sharedVhost = vhost;
    }
    return new Offered(this, sharedVhost, false);
  }

  @Override
  public TestBroker start() {
    return new Offered(this, LocalRabbitMq.newVhost("postbox-own"), true);
  }

  @Override
  public Map<String, String> unreachableConfig() {
    return LocalRabbitMq.unreachableConfig();
  }

  private static final class Offered extends OfferedTestBroker {
    private final String vhost;

    Offered(Provider provider, String vhost, boolean own) {
      super(provider, own);
      this.vhost = vhost;
    }

    @Override
    public Map<String, String> config() {
      return LocalRabbitMq.config(vhost);
    }

    @Override
    public void createDestination(String name, int partitions) {
      try {
        LocalRabbitMq.declareShards(vhost, name, SHARDS);
      } catch (Exception e) {
        throw new IllegalStateException("declaring the queues of " + name + " failed", e);
      }
    }

    @Override
    public void sendRaw(String destination, Map<String, String> headers, String body)
        throws Exception {
      LocalRabbitMq.declareShards(vhost, destination, SHARDS);
      LocalRabbitMq.sendRaw(vhost, destination + ".0", headers, body);
    }

    @Override
    public String restartLabel() {
      return "rabbitmqctl stop_app / start_app";
    }

    @Override
    protected void restartOwn() {
      LocalRabbitMq.stopApp();
      LocalRabbitMq.startApp();
    }

    @Override
    protected void stopOwn() {
      LocalRabbitMq.stopApp();
    }

    @Override
    public void resume() {
      LocalRabbitMq.startApp();
    }

    @Override
    protected void closeOwn() {
      LocalRabbitMq.deleteVhost(vhost);
    }
  }
}
