package dev.postbox.broker.artemis;

import dev.postbox.spi.Envelope;
import dev.postbox.spi.MalformedMessageException;
import jakarta.jms.BytesMessage;
import jakarta.jms.JMSException;
import jakarta.jms.Message;
import jakarta.jms.TextMessage;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

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

  static final String PREFIX = "ce_";
  static final String SPEC_VERSION = "1.0";
  static final String GROUP = "JMSXGroupID";
  static final String DUPLICATE_ID = "_AMQ_DUPL_ID";

  /** Deliveries that came before this copy of the message, carried across nack copies. */
  static final String PRIOR_ATTEMPTS = "postbox_priorattempts";

  private static final Set<String> PLAIN = Set.of(Envelope.TRACEPARENT, Envelope.TRACESTATE);

  private CloudEventsJmsProperties() {}

  static void write(Envelope e, Message m) throws JMSException {
    m.setStringProperty(PREFIX + "specversion", SPEC_VERSION);
    m.setStringProperty(PREFIX + "id", e.id());
    m.setStringProperty(PREFIX + "source", e.source());
    m.setStringProperty(PREFIX + "type", e.type());
    if (e.subject() != null) {
      m.setStringProperty(PREFIX + "subject", e.subject());
    }
    m.setStringProperty(PREFIX + "time", e.time().toString());
    if (e.dataContentType() != null) {
      m.setStringProperty(PREFIX + "datacontenttype", e.dataContentType());
    }
    if (e.key() != null) {
      m.setStringProperty(GROUP, e.key());
    }
    for (Map.Entry<String, String> h : e.headers().entrySet()) {
      m.setStringProperty(
          PLAIN.contains(h.getKey()) ? h.getKey() : PREFIX + h.getKey(), h.getValue());
    }
  }

  /**
   * Reads an envelope back.
   *
   * @throws MalformedMessageException when the message is not a valid CloudEvent
   */
  static Envelope read(Message m) throws JMSException {
    byte[] payload = body(m);
    Map<String, String> raw = properties(m);
    String version = raw.get(PREFIX + "specversion");
    if (version == null) {
      throw new MalformedMessageException(
          "not a CloudEvent: no ce_specversion property", payload, raw, null);
    }
    if (!SPEC_VERSION.equals(version)) {
      throw new MalformedMessageException(
          "unsupported CloudEvents specversion '" + version + "'", payload, raw, null);
    }
    try {
      String time = raw.get(PREFIX + "time");
      if (time == null) {
        throw new MalformedMessageException("missing ce_time property", payload, raw, null);
      }
      Envelope.Builder b =
          Envelope.builder()
              .id(raw.get(PREFIX + "id"))
              .source(raw.get(PREFIX + "source"))
              .type(raw.get(PREFIX + "type"))
              .subject(raw.get(PREFIX + "subject"))
              .key(raw.get(GROUP))
              .time(Instant.parse(time))
              .dataContentType(raw.get(PREFIX + "datacontenttype"))
              .payload(payload);
      for (Map.Entry<String, String> p : raw.entrySet()) {
        String name = p.getKey();
        if (PLAIN.contains(name)) {
          b.header(name, p.getValue());
        } else if (name.startsWith(PREFIX)
            && !Envelope.RESERVED_NAMES.contains(name.substring(PREFIX.length()))) {
          b.header(name.substring(PREFIX.length()), p.getValue());
        }
      }
      return b.build();
    } catch (IllegalArgumentException | NullPointerException | DateTimeParseException e) {
      throw new MalformedMessageException("invalid CloudEvent: " + e.getMessage(), payload, raw, e);
    }
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
