package dev.postbox.runtime.jakarta.deployment;

import org.jboss.arquillian.container.test.api.Deployment;
import org.jboss.shrinkwrap.api.spec.WebArchive;

/**
 * The Kafka micro-deployment on MariaDB: Postbox's tables and the application's JPA entities
 * through EclipseLink, in a server JVM whose default time zone is UTC+14.
 */
public class MariaDbDeploymentIT extends DeploymentContract {

  @Deployment
  public static WebArchive deployment() {
    Deployments.freshMariaDbDatabase("postbox_arq");
    return Deployments.ordersOn(
        "kafka", "deployment-mariadb", "jdbc/arq-mariadb", MariaDbDeploymentIT.class);
  }
}
