package dev.postbox.broker.sqs;

import dev.postbox.spi.BrokerException;
import dev.postbox.spi.PermanentBrokerException;
import dev.postbox.spi.RetriableBrokerException;
import software.amazon.awssdk.awscore.exception.AwsServiceException;
import software.amazon.awssdk.core.exception.SdkClientException;

/** Tells retriable SQS failures from permanent ones. */
final class SqsErrors {

  private SqsErrors() {}

  /**
   * Network failures, timeouts, throttling and server errors (5xx) are retriable. Other service
   * errors (a missing queue, access denied, invalid parameters) are the caller's fault and cannot
   * be cured by retrying.
   */
  static BrokerException map(String what, RuntimeException e) {
    String message = what + ": " + e.getClass().getSimpleName() + ": " + e.getMessage();
    if (e instanceof AwsServiceException service) {
      boolean transientFailure = service.isThrottlingException() || service.statusCode() >= 500;
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
