package dev.postbox.payments.broker;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import jakarta.jms.JMSSecurityException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.activemq.artemis.core.config.impl.ConfigurationImpl;
import org.apache.activemq.artemis.core.server.JournalType;
import org.apache.activemq.artemis.core.server.embedded.EmbeddedActiveMQ;
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;
import org.junit.jupiter.api.Test;

/** The embedded broker's security on a real Artemis server: in-VM trusted, TCP by user only. */
class EmbeddedBrokerSecurityIT {

  @Test
  void tcpClientsNeedTheUserWhileTheApplicationConnectsInVm() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    Path dir = Files.createTempDirectory("embedded-security");
    ConfigurationImpl config = new ConfigurationImpl();
    config.setPersistenceEnabled(false);
    config.setSecurityEnabled(true);
    config.setAuthenticationCacheSize(0); // as EmbeddedArtemis does
    config.setJournalType(JournalType.NIO);
    config.setJournalDirectory(dir.toString());
    config.addAcceptorConfiguration("in-vm", "vm://7");
    config.addAcceptorConfiguration("tcp", "tcp://127.0.0.1:" + port);
    EmbeddedActiveMQ server = new EmbeddedActiveMQ();
    server.setConfiguration(config);
    server.setSecurityManager(new EmbeddedBrokerSecurity("app", "s3cret"));
    server.start();
    try (var tcp = new ActiveMQConnectionFactory("tcp://127.0.0.1:" + port);
        var inVm = new ActiveMQConnectionFactory("vm://7")) {
      // the application first, as in the server: its in-VM login must not open TCP to others
      assertThatCode(() -> inVm.createConnection().close()).doesNotThrowAnyException();
      assertThatThrownBy(() -> tcp.createConnection().close())
          .isInstanceOf(JMSSecurityException.class);
      assertThatThrownBy(() -> tcp.createConnection("app", "wrong").close())
          .isInstanceOf(JMSSecurityException.class);
      assertThatCode(() -> tcp.createConnection("app", "s3cret").close())
          .doesNotThrowAnyException();
      assertThatCode(() -> inVm.createConnection().close()).doesNotThrowAnyException();
    } finally {
      server.stop();
    }
  }
}
