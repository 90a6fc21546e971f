package dev.postbox.runtime.jakarta.deployment;

import org.jboss.arquillian.container.test.api.Deployment;
import org.jboss.shrinkwrap.api.spec.WebArchive;

/** The micro-deployment with the Artemis adapter (a broker over TCP), on PostgreSQL. */
public class ArtemisDeploymentIT extends DeploymentContract {

  @Deployment
  public static WebArchive deployment() {
    Deployments.freshPostgresSchema("arq_artemis");
    return Deployments.ordersOn(
        "artemis", "deployment-artemis", "jdbc/arq-artemis", ArtemisDeploymentIT.class);
  }
}
