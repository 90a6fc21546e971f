package dev.postbox.broker.artemis;

import dev.postbox.spi.BrokerException;
import dev.postbox.spi.PermanentBrokerException;
import dev.postbox.spi.RetriableBrokerException;
import jakarta.jms.InvalidDestinationException;
import jakarta.jms.InvalidDestinationRuntimeException;
import jakarta.jms.JMSSecurityException;
import jakarta.jms.JMSSecurityRuntimeException;
import jakarta.jms.MessageFormatException;
import jakarta.jms.MessageFormatRuntimeException;

/** Tells retriable JMS failures from permanent ones. */
final class ArtemisErrors {

  private ArtemisErrors() {}

  /**
   * Security, destination and format errors cannot be cured by retrying; everything else
   * (connection loss, call timeouts, a broker that is shutting down) can.
   */
  static BrokerException map(String what, Exception e) {
    String message = what + ": " + e.getClass().getSimpleName() + ": " + e.getMessage();
    if (e instanceof JMSSecurityException
        || e instanceof JMSSecurityRuntimeException
        || e instanceof InvalidDestinationException
        || e instanceof InvalidDestinationRuntimeException
        || e instanceof MessageFormatException
        || e instanceof MessageFormatRuntimeException) {
      return new PermanentBrokerException(message, e);
    }
    return new RetriableBrokerException(message, e);
  }
}
