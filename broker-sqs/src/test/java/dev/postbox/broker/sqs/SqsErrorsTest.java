package dev.postbox.broker.sqs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.spi.BrokerException;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.awscore.exception.AwsErrorDetails;
import software.amazon.awssdk.awscore.exception.AwsServiceException;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.services.sqs.model.QueueDoesNotExistException;
import software.amazon.awssdk.services.sqs.model.SqsException;

class SqsErrorsTest {

  @Test
  void aMissingQueueIsRetriableAndNamed() {
    BrokerException e =
        SqsErrors.map(
            "publish to orders",
            QueueDoesNotExistException.builder()
                .statusCode(400)
                .message("The specified queue does not exist.")
                .build());
    assertThat(e.isRetriable()).isTrue();
    assertThat(e).hasMessageContaining("publish to orders").hasMessageContaining("does not exist");
  }

  @Test
  void serverErrorsThrottlingAndNetworkFailuresAreRetriable() {
    assertThat(SqsErrors.map("x", service(500, "InternalError")).isRetriable()).isTrue();
    assertThat(SqsErrors.map("x", service(400, "ThrottlingException")).isRetriable()).isTrue();
    assertThat(SqsErrors.map("x", SdkClientException.create("connection refused")).isRetriable())
        .isTrue();
  }

  @Test
  void accessDeniedAndInvalidParametersArePermanent() {
    assertThat(SqsErrors.map("x", service(403, "AccessDenied")).isRetriable()).isFalse();
    assertThat(SqsErrors.map("x", service(400, "InvalidParameterValue")).isRetriable()).isFalse();
  }

  private static AwsServiceException service(int status, String code) {
    return SqsException.builder()
        .statusCode(status)
        .awsErrorDetails(AwsErrorDetails.builder().errorCode(code).errorMessage(code).build())
        .build();
  }
}
