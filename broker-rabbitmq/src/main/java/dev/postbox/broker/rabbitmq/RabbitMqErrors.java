package dev.postbox.broker.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.AuthenticationFailureException;
import com.rabbitmq.client.Method;
import com.rabbitmq.client.ShutdownSignalException;
import dev.postbox.spi.BrokerException;
import dev.postbox.spi.PermanentBrokerException;
import dev.postbox.spi.RetriableBrokerException;

/** Tells retriable RabbitMQ failures from permanent ones. */
final class RabbitMqErrors {

  static final int ACCESS_REFUSED = 403;
  static final int NOT_FOUND = 404;
  static final int RESOURCE_LOCKED = 405;
  static final int PRECONDITION_FAILED = 406;
  static final int NOT_ALLOWED = 530;

  private RabbitMqErrors() {}

  /**
   * Refused access, a missing queue, a queue declared with other arguments, a virtual host that is
   * not allowed and refused credentials cannot be cured by retrying; everything else (a lost
   * connection, a timeout, a server shutting down, a nack of a confirm) can.
   */
  static BrokerException map(String what, Exception e) {
    String message = what + ": " + describe(e);
    int code = replyCode(e);
    if (code == ACCESS_REFUSED
        || code == NOT_FOUND
        || code == PRECONDITION_FAILED
        || code == NOT_ALLOWED
        || find(e, AuthenticationFailureException.class) != null) {
      return new PermanentBrokerException(message, e);
    }
    return new RetriableBrokerException(message, e);
  }

  /** The AMQP reply code of the channel or connection close behind {@code e}; 0 if none. */
  static int replyCode(Throwable e) {
    ShutdownSignalException s = find(e, ShutdownSignalException.class);
    if (s == null) {
      return 0;
    }
    Method reason = s.getReason();
    if (reason instanceof AMQP.Channel.Close c) {
      return c.getReplyCode();
    }
    if (reason instanceof AMQP.Connection.Close c) {
      return c.getReplyCode();
    }
    return 0;
  }

  static String describe(Throwable e) {
    ShutdownSignalException s = find(e, ShutdownSignalException.class);
    if (s != null && s.getReason() instanceof AMQP.Channel.Close c) {
      return c.getReplyCode() + " " + c.getReplyText();
    }
    if (s != null && s.getReason() instanceof AMQP.Connection.Close c) {
      return c.getReplyCode() + " " + c.getReplyText();
    }
    return e.getClass().getSimpleName() + ": " + e.getMessage();
  }

  static <T extends Throwable> T find(Throwable e, Class<T> type) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (type.isInstance(t)) {
        return type.cast(t);
      }
    }
    return null;
  }
}
