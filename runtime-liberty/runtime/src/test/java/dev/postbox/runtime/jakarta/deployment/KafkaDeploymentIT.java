package dev.postbox.runtime.jakarta.deployment;

import org.jboss.arquillian.container.test.api.Deployment;
import org.jboss.shrinkwrap.api.spec.WebArchive;

/** The micro-deployment with the Kafka adapter, on PostgreSQL. */
public class KafkaDeploymentIT extends DeploymentContract {

  @Deployment
  public static WebArchive deployment() {
    Deployments.freshPostgresSchema("arq_kafka");
    return Deployments.ordersOn(
        "kafka", "deployment-kafka", "jdbc/arq-kafka", KafkaDeploymentIT.class);
  }
}
