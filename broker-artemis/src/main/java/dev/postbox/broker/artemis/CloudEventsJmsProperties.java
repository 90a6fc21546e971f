package dev.postbox.broker.artemis;

import dev.postbox.spi.CloudEventsWire;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.MalformedMessageException;
import jakarta.jms.BytesMessage;
import jakarta.jms.JMSException;
import jakarta.jms.Message;
import jakarta.jms.TextMessage;
import java.nio.charset.StandardCharsets;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Maps envelopes to and from JMS messages in CloudEvents binary mode.
 *
 * <p>CloudEvents has no JMS binding of its own; this follows its Kafka and AMQP bindings with names
 * that are legal JMS property identifiers: {@code ce_specversion}, {@code ce_id}, {@code
 * ce_source}, {@code ce_type}, {@code ce_subject}, {@code ce_time}, {@code ce_datacontenttype},
 * {@code ce_<extension>}. The ordering key is the JMS group ({@code JMSXGroupID}); W3C {@code
 * traceparent} and {@code tracestate} travel under their own names. The payload is the body of a
 * {@link BytesMessage}.
 */
final class CloudEventsJmsProperties {

  static final String GROUP = "JMSXGroupID";
  static final String DUPLICATE_ID = "_AMQ_DUPL_ID";

  /** Deliveries that came before this copy of the message, carried across nack copies. */
  static final String PRIOR_ATTEMPTS = "postbox_priorattempts";

  private static final CloudEventsWire WIRE =
      CloudEventsWire.binding("property", CloudEventsWire.PREFIX + "datacontenttype", GROUP);

  private CloudEventsJmsProperties() {}

  static void write(Envelope e, Message m) throws JMSException {
    for (Map.Entry<String, String> p : WIRE.write(e).entrySet()) {
      m.setStringProperty(p.getKey(), p.getValue());
    }
  }

  /**
   * Reads an envelope back.
   *
   * @param body the message's body, as {@link #body} read it
   * @throws MalformedMessageException when the message is not a valid CloudEvent
   */
  static Envelope read(Message m, byte[] body) throws JMSException {
    Map<String, String> raw = properties(m);
    return WIRE.read(raw, null, body, raw);
  }

  static byte[] body(Message m) throws JMSException {
    if (m instanceof BytesMessage bytes) {
      bytes.reset();
      byte[] body = new byte[(int) bytes.getBodyLength()];
      bytes.readBytes(body);
      bytes.reset();
      return body;
    }
    if (m instanceof TextMessage text) {
      String t = text.getText();
      return t == null ? new byte[0] : t.getBytes(StandardCharsets.UTF_8);
    }
    return new byte[0];
  }

  static Map<String, String> properties(Message m) throws JMSException {
    Map<String, String> raw = new LinkedHashMap<>();
    @SuppressWarnings("unchecked")
    Enumeration<String> names = m.getPropertyNames();
    while (names.hasMoreElements()) {
      String name = names.nextElement();
      Object value = m.getObjectProperty(name);
      raw.put(name, value == null ? "" : value.toString());
    }
    return raw;
  }
}
