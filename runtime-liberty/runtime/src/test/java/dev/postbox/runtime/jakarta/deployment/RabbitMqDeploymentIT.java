package dev.postbox.runtime.jakarta.deployment;

import org.jboss.arquillian.container.test.api.Deployment;
import org.jboss.shrinkwrap.api.spec.WebArchive;

/**
 * The micro-deployment with the RabbitMQ adapter (the local server, a vhost of its own), on
 * PostgreSQL.
 */
public class RabbitMqDeploymentIT extends DeploymentContract {

  @Deployment
  public static WebArchive deployment() {
    Deployments.freshPostgresSchema("arq_rabbitmq");
    return Deployments.ordersOn(
        "rabbitmq", "deployment-rabbitmq", "jdbc/arq-rabbitmq", RabbitMqDeploymentIT.class);
  }
}
