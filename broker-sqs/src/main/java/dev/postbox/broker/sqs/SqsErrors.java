package dev.postbox.broker.sqs;

import dev.postbox.spi.BrokerException;
import dev.postbox.spi.PermanentBrokerException;
import dev.postbox.spi.RetriableBrokerException;
import software.amazon.awssdk.awscore.exception.AwsServiceException;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.services.sqs.model.QueueDoesNotExistException;

/** Tells retriable SQS failures from permanent ones. */
final class SqsErrors {

  private SqsErrors() {}

  /**
   * Network failures, timeouts, throttling, server errors (5xx) and a missing queue are retriable.
   * Other service errors (access denied, invalid parameters) are the caller's fault and cannot be
   * cured by retrying.
   *
   * <p>A missing queue is retriable because it is often a matter of time: SQS asks for a second's
   * wait after CreateQueue, a deployment may create the queue after the application starts, and a
   * restarted SQS-compatible server answers before it has restored its queues. Parking the outbox
   * row at the first answer would need an operator for each; retrying with back-off heals by itself
   * and still parks the row after the configured attempts.
   */
  static BrokerException map(String what, RuntimeException e) {
    String message = what + ": " + e.getClass().getSimpleName() + ": " + e.getMessage();
    if (e instanceof AwsServiceException service) {
      boolean transientFailure =
          service.isThrottlingException()
              || service.statusCode() >= 500
              || service instanceof QueueDoesNotExistException;
      return transientFailure
          ? new RetriableBrokerException(message, e)
          : new PermanentBrokerException(message, e);
    }
    if (e instanceof SdkClientException) {
      return new RetriableBrokerException(message, e);
    }
    return new RetriableBrokerException(message, e);
  }
}
