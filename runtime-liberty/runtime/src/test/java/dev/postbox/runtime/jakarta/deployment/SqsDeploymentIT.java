package dev.postbox.runtime.jakarta.deployment;

import org.jboss.arquillian.container.test.api.Deployment;
import org.jboss.shrinkwrap.api.spec.WebArchive;

/** The micro-deployment with the SQS adapter (ElasticMQ, a standard queue), on PostgreSQL. */
public class SqsDeploymentIT extends DeploymentContract {

  @Deployment
  public static WebArchive deployment() {
    Deployments.freshPostgresSchema("arq_sqs");
    return Deployments.ordersOn("sqs", "deployment-sqs", "jdbc/arq-sqs", SqsDeploymentIT.class);
  }
}
