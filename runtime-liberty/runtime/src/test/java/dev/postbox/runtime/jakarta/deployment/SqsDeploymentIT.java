package dev.postbox.runtime.jakarta.deployment;

import dev.postbox.broker.sqs.testing.ElasticMqTestBroker;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import org.jboss.arquillian.container.test.api.Deployment;
import org.jboss.shrinkwrap.api.spec.WebArchive;

/** The micro-deployment with the SQS adapter (ElasticMQ, a standard queue), on PostgreSQL. */
public class SqsDeploymentIT extends DeploymentContract {

  @Deployment
  public static WebArchive deployment() {
    ElasticMqTestBroker sqs = ElasticMqTestBroker.shared();
    String queue = "deployment-sqs-" + UUID.randomUUID();
    sqs.createQueue(queue);
    Deployments.freshPostgresSchema("arq_sqs");
    Map<String, String> config = new HashMap<>();
    sqs.config().forEach((k, v) -> config.put("postbox.broker." + k, v));
    config.put("postbox.broker", "sqs");
    config.put("deployment.topic", queue);
    return Deployments.orders(
        "deployment-sqs", "sqs", "jdbc/arq-sqs", config, SqsDeploymentIT.class);
  }
}
