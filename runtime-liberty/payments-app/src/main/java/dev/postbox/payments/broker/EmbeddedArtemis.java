package dev.postbox.payments.broker;

import jakarta.annotation.Priority;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.enterprise.event.Shutdown;
import jakarta.enterprise.event.Startup;
import jakarta.inject.Inject;
import java.lang.System.Logger.Level;
import java.nio.file.Path;
import org.apache.activemq.artemis.api.core.client.ActiveMQClient;
import org.apache.activemq.artemis.core.config.impl.ConfigurationImpl;
import org.apache.activemq.artemis.core.server.JournalType;
import org.apache.activemq.artemis.core.server.embedded.EmbeddedActiveMQ;
import org.apache.activemq.artemis.core.settings.impl.AddressSettings;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * The embedded default broker: an Artemis server inside the application, with a persistent journal
 * under the server's output directory, reachable in-VM as {@code vm://0} (and on TCP if a port is
 * set). Starts before Postbox, stops after it.
 */
@ApplicationScoped
public class EmbeddedArtemis {

  private static final System.Logger LOG = System.getLogger(EmbeddedArtemis.class.getName());

  /** Off unless the server says so: the default build's server.xml variables turn it on. */
  @Inject
  @ConfigProperty(name = "payments.embedded-artemis", defaultValue = "false")
  boolean enabled;

  @Inject
  @ConfigProperty(name = "payments.embedded-artemis.data-dir")
  String dataDir;

  @Inject
  @ConfigProperty(name = "payments.embedded-artemis.tcp-port")
  int tcpPort;

  /** The one user allowed over TCP; required when the TCP port is open. */
  @Inject
  @ConfigProperty(name = "payments.embedded-artemis.tcp-user")
  java.util.Optional<String> tcpUser;

  @Inject
  @ConfigProperty(name = "payments.embedded-artemis.tcp-password")
  java.util.Optional<String> tcpPassword;

  private EmbeddedActiveMQ server;

  void start(@Observes @Priority(100) Startup startup) throws Exception {
    if (!enabled) {
      return;
    }
    if (tcpPort > 0
        && (tcpUser.filter(u -> !u.isBlank()).isEmpty()
            || tcpPassword.filter(p -> !p.isBlank()).isEmpty())) {
      throw new IllegalStateException(
          "payments.embedded-artemis.tcp-port="
              + tcpPort
              + " opens the embedded broker on TCP: set payments.embedded-artemis.tcp-user and"
              + " payments.embedded-artemis.tcp-password (environment PAYMENTS_EMBEDDED_ARTEMIS_TCP_USER,"
              + " ..._TCP_PASSWORD), or leave the port at 0 for in-VM use only");
    }
    Path dir = Path.of(dataDir).toAbsolutePath();
    ConfigurationImpl config = new ConfigurationImpl();
    config.setName("payments");
    config.setPersistenceEnabled(true);
    // The application connects in-VM without credentials; TCP clients need the configured user.
    config.setSecurityEnabled(true);
    // No authentication cache: its key is the user and password, not the transport, so the
    // in-VM application's credential-less login would let a credential-less TCP client in.
    config.setAuthenticationCacheSize(0);
    config.setJournalType(JournalType.NIO);
    config.setJournalDirectory(dir.resolve("journal").toString());
    config.setBindingsDirectory(dir.resolve("bindings").toString());
    config.setPagingDirectory(dir.resolve("paging").toString());
    config.setLargeMessagesDirectory(dir.resolve("large-messages").toString());
    config.addAcceptorConfiguration("in-vm", "vm://0");
    if (tcpPort > 0) {
      config.addAcceptorConfiguration("tcp", "tcp://127.0.0.1:" + tcpPort);
    }
    // Inside an application server: bound the memory it may take, no critical-analyzer halts.
    config.setGlobalMaxSize(64L * 1024 * 1024);
    config.setCriticalAnalyzer(false);
    config.addAddressSetting(
        "#",
        new AddressSettings()
            .setDeadLetterAddress(org.apache.activemq.artemis.api.core.SimpleString.of("DLQ"))
            .setExpiryAddress(org.apache.activemq.artemis.api.core.SimpleString.of("ExpiryQueue"))
            .setMaxDeliveryAttempts(-1)); // Postbox counts attempts and dead-letters itself
    server = new EmbeddedActiveMQ();
    server.setConfiguration(config);
    server.setSecurityManager(
        new EmbeddedBrokerSecurity(tcpUser.orElse(""), tcpPassword.orElse("")));
    server.start();
    LOG.log(Level.INFO, "embedded Artemis broker started, journal in " + dir);
  }

  void stop(@Observes @Priority(5000) Shutdown shutdown) throws Exception {
    if (server != null) {
      server.stop();
      server = null;
      // Static client threads would otherwise keep the old class loader alive on redeploy.
      ActiveMQClient.clearThreadPools();
    }
  }
}
