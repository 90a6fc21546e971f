package dev.postbox.runtime.jakarta.deployment;

import dev.postbox.broker.kafka.testing.KafkaTestBroker;
import java.util.Map;
import java.util.UUID;
import org.jboss.arquillian.container.test.api.Deployment;
import org.jboss.shrinkwrap.api.spec.WebArchive;

/** The micro-deployment with the Kafka adapter, on PostgreSQL. */
public class KafkaDeploymentIT extends DeploymentContract {

  @Deployment
  public static WebArchive deployment() {
    KafkaTestBroker kafka = KafkaTestBroker.shared();
    String topic = "deployment-kafka-" + UUID.randomUUID();
    kafka.createTopic(topic, 4);
    Deployments.freshPostgresSchema("arq_kafka");
    return Deployments.orders(
        "deployment-kafka",
        "kafka",
        "jdbc/arq-kafka",
        Map.of(
            "postbox.broker",
            "kafka",
            "postbox.broker.bootstrap.servers",
            kafka.bootstrapServers(),
            "deployment.topic",
            topic),
        KafkaDeploymentIT.class);
  }
}
