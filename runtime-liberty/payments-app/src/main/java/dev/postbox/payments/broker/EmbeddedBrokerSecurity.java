package dev.postbox.payments.broker;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Set;
import javax.security.auth.Subject;
import org.apache.activemq.artemis.core.remoting.impl.invm.InVMConnection;
import org.apache.activemq.artemis.core.security.CheckType;
import org.apache.activemq.artemis.core.security.Role;
import org.apache.activemq.artemis.spi.core.protocol.RemotingConnection;
import org.apache.activemq.artemis.spi.core.security.ActiveMQSecurityManager5;
import org.apache.activemq.artemis.spi.core.security.jaas.UserPrincipal;

/**
 * Who may use the embedded broker: the application itself over {@code vm://0} (same process, no
 * credentials), and over TCP only the one configured user. Any other TCP client is refused, so no
 * local process can consume or inject events.
 */
final class EmbeddedBrokerSecurity implements ActiveMQSecurityManager5 {

  private final String user;
  private final byte[] password;

  EmbeddedBrokerSecurity(String user, String password) {
    this.user = user;
    this.password = password.getBytes(StandardCharsets.UTF_8);
  }

  @Override
  public Subject authenticate(
      String user, String password, RemotingConnection connection, String securityDomain) {
    if (connection != null && connection.getTransportConnection() instanceof InVMConnection) {
      return subject("in-vm");
    }
    return validateUser(user, password) ? subject(user) : null;
  }

  @Override
  public boolean authorize(Subject subject, Set<Role> roles, CheckType checkType, String address) {
    return subject != null; // one trusted user: everything, or nothing
  }

  @Override
  public boolean validateUser(String user, String password) {
    return user != null
        && password != null
        && this.user.equals(user)
        && MessageDigest.isEqual(this.password, password.getBytes(StandardCharsets.UTF_8));
  }

  @Override
  public boolean validateUserAndRole(
      String user, String password, Set<Role> roles, CheckType checkType) {
    return validateUser(user, password);
  }

  private static Subject subject(String name) {
    Subject s = new Subject();
    s.getPrincipals().add(new UserPrincipal(name));
    return s;
  }
}
