package dev.postbox.broker.kafka;

import dev.postbox.spi.BrokerException;
import dev.postbox.spi.PermanentBrokerException;
import dev.postbox.spi.RetriableBrokerException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.RecordBatchTooLargeException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.errors.UnsupportedVersionException;

/** Tells retriable Kafka failures from permanent ones. */
final class KafkaErrors {

  private KafkaErrors() {}

  /**
   * Maps a Kafka client failure. Errors that retrying cannot cure are permanent; everything else,
   * including unknown errors, is retriable, because a relay that retries with back-off and a cap
   * loses nothing, while a wrongly permanent error parks an event that would have gone through.
   */
  static BrokerException map(String what, Throwable failure) {
    Throwable t = unwrap(failure);
    if (t instanceof BrokerException b) {
      return b;
    }
    String message = what + ": " + t.getClass().getSimpleName() + ": " + t.getMessage();
    if (t instanceof org.apache.kafka.common.errors.FencedInstanceIdException) {
      // Two live consumers joined under one group.instance.id: two instances share a member name.
      return new RetriableBrokerException(
          message
              + " (another live consumer joined the group under the same static member id: give"
              + " every running instance its own member name, postbox.member-name)",
          t);
    }
    if (t instanceof RecordTooLargeException
        || t instanceof RecordBatchTooLargeException
        || t instanceof AuthorizationException
        || t instanceof AuthenticationException
        || t instanceof InvalidTopicException
        || t instanceof InvalidRecordException
        || t instanceof SerializationException
        || t instanceof UnsupportedVersionException) {
      return new PermanentBrokerException(message, t);
    }
    return new RetriableBrokerException(message, t);
  }

  static Throwable unwrap(Throwable t) {
    while ((t instanceof ExecutionException || t instanceof CompletionException)
        && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }
}
