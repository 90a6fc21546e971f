package dev.postbox.runtime.jakarta.deployment;

import dev.postbox.broker.kafka.testing.KafkaTestBroker;
import java.util.Map;
import java.util.UUID;
import org.jboss.arquillian.container.test.api.Deployment;
import org.jboss.shrinkwrap.api.spec.WebArchive;

/**
 * The Kafka micro-deployment on MariaDB: Postbox's tables and the application's JPA entities
 * through EclipseLink, in a server JVM whose default time zone is UTC+14.
 */
public class MariaDbDeploymentIT extends DeploymentContract {

  @Deployment
  public static WebArchive deployment() {
    KafkaTestBroker kafka = KafkaTestBroker.shared();
    String topic = "deployment-mariadb-" + UUID.randomUUID();
    kafka.createTopic(topic, 4);
    Deployments.freshMariaDbDatabase("postbox_arq");
    return Deployments.orders(
        "deployment-mariadb",
        "kafka",
        "jdbc/arq-mariadb",
        Map.of(
            "postbox.broker",
            "kafka",
            "postbox.broker.bootstrap.servers",
            kafka.bootstrapServers(),
            "deployment.topic",
            topic),
        MariaDbDeploymentIT.class);
  }
}
