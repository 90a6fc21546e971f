package dev.postbox.broker.artemis.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.activemq.artemis.api.core.SimpleString;
import org.apache.activemq.artemis.core.config.impl.ConfigurationImpl;
import org.apache.activemq.artemis.core.server.JournalType;
import org.apache.activemq.artemis.core.server.embedded.EmbeddedActiveMQ;
import org.apache.activemq.artemis.core.settings.impl.AddressSettings;

/**
 * A real Artemis broker in the test JVM: persistent NIO journal under {@code java.io.tmpdir} (the
 * module's {@code target/}), security off, a TCP acceptor on a free port and an in-VM acceptor.
 * Address settings give every address a dead-letter queue ({@code DLQ}) after 10 deliveries.
 *
 * <p>{@link #shared()} serves most tests; tests that restart the broker use {@link #start()}.
 */
public final class ArtemisTestBroker implements AutoCloseable {

  private static final AtomicInteger VM_IDS = new AtomicInteger(100);
  private static ArtemisTestBroker shared;

  private final Path dataDir;
  private final int port;
  private final int vmId = VM_IDS.incrementAndGet();
  private EmbeddedActiveMQ server;

  private ArtemisTestBroker() {
    try {
      this.dataDir = Files.createTempDirectory("artemis-test-broker-");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    this.port = freePort();
  }

  /** The broker shared by all tests in this JVM; started on first use, stopped at JVM exit. */
  public static synchronized ArtemisTestBroker shared() {
    if (shared == null) {
      shared = start();
      Runtime.getRuntime().addShutdownHook(new Thread(shared::close, "artemis-test-broker-stop"));
    }
    return shared;
  }

  /** A new broker of the caller's own. */
  public static ArtemisTestBroker start() {
    ArtemisTestBroker broker = new ArtemisTestBroker();
    broker.startServer();
    return broker;
  }

  /** {@code tcp://localhost:<port>}. */
  public String url() {
    return "tcp://localhost:" + port;
  }

  /** A URL where nothing listens. */
  public static String unreachableUrl() {
    return "tcp://localhost:" + freePort();
  }

  /** The server, for assertions on queues. */
  public EmbeddedActiveMQ server() {
    return server;
  }

  /** Stops the broker, then starts it again on the same port and journal. */
  public synchronized void restart() {
    stop();
    startServer();
  }

  public synchronized void stop() {
    if (server != null) {
      try {
        server.stop();
      } catch (Exception e) {
        throw new IllegalStateException("stopping the Artemis test broker failed", e);
      }
      server = null;
    }
  }

  /** Starts a stopped broker again, on the same port and journal. */
  public synchronized void resume() {
    if (server == null) {
      startServer();
    }
  }

  @Override
  public void close() {
    stop();
  }

  private void startServer() {
    try {
      ConfigurationImpl config = new ConfigurationImpl();
      config.setName("postbox-test-" + vmId);
      config.setPersistenceEnabled(true);
      config.setSecurityEnabled(false);
      config.setJournalType(JournalType.NIO);
      config.setJournalDirectory(dataDir.resolve("journal").toString());
      config.setBindingsDirectory(dataDir.resolve("bindings").toString());
      config.setPagingDirectory(dataDir.resolve("paging").toString());
      config.setLargeMessagesDirectory(dataDir.resolve("large").toString());
      config.setNodeManagerLockDirectory(dataDir.resolve("lock").toString());
      config.addAcceptorConfiguration("tcp", "tcp://localhost:" + port);
      config.addAcceptorConfiguration("invm", "vm://" + vmId);
      config.setCriticalAnalyzer(false);
      config.setGlobalMaxSize(128L * 1024 * 1024);
      config.setIDCacheSize(20_000);
      config.setPersistIDCache(true);
      config.addAddressSetting(
          "#",
          new AddressSettings()
              .setDeadLetterAddress(SimpleString.of("DLQ"))
              .setExpiryAddress(SimpleString.of("ExpiryQueue"))
              .setMaxDeliveryAttempts(10)
              .setAutoCreateQueues(true)
              .setAutoCreateAddresses(true));
      EmbeddedActiveMQ embedded = new EmbeddedActiveMQ();
      embedded.setConfiguration(config);
      embedded.start();
      if (!embedded
          .getActiveMQServer()
          .waitForActivation(30, java.util.concurrent.TimeUnit.SECONDS)) {
        throw new IllegalStateException("Artemis test broker did not activate in 30s");
      }
      server = embedded;
    } catch (Exception e) {
      throw new IllegalStateException("starting the Artemis test broker failed", e);
    }
  }

  private static int freePort() {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
