package dev.postbox.runtime.jakarta.deployment;

import dev.postbox.broker.artemis.testing.ArtemisTestBroker;
import java.util.Map;
import java.util.UUID;
import org.jboss.arquillian.container.test.api.Deployment;
import org.jboss.shrinkwrap.api.spec.WebArchive;

/** The micro-deployment with the Artemis adapter (a broker over TCP), on PostgreSQL. */
public class ArtemisDeploymentIT extends DeploymentContract {

  @Deployment
  public static WebArchive deployment() {
    ArtemisTestBroker artemis = ArtemisTestBroker.shared();
    Deployments.freshPostgresSchema("arq_artemis");
    return Deployments.orders(
        "deployment-artemis",
        "artemis",
        "jdbc/arq-artemis",
        Map.of(
            "postbox.broker",
            "artemis",
            "postbox.broker.url",
            artemis.url(),
            // Artemis's own duplicate detection would drop the republished copy at the broker;
            // off, the copy is delivered and the inbox must skip it.
            "postbox.broker.duplicate.detection",
            "false",
            "deployment.topic",
            "deployment-artemis-" + UUID.randomUUID()),
        ArtemisDeploymentIT.class);
  }
}
