package dev.postbox.broker.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.LongString;
import dev.postbox.spi.CloudEventsWire;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.EventRules;
import dev.postbox.spi.InvalidEventException;
import dev.postbox.spi.MalformedMessageException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The CloudEvents binary content mode on AMQP 0-9-1 messages: attributes and extensions as {@code
 * ce_} headers, the content type in the message's {@code content-type} property, the key in the
 * {@code ce_partitionkey} header (the CloudEvents partitioning extension), the event id also as the
 * {@code message-id} property. Headers the adapter or the broker adds ({@code
 * postbox-prior-attempts}, {@code x-delivery-count}, {@code x-death}) are not part of the event.
 */
final class AmqpHeaders {

  static final CloudEventsWire WIRE =
      CloudEventsWire.binding("header", "content-type", "ce_partitionkey");

  /** How many times the envelope was delivered before it was copied into a wait queue. */
  static final String PRIOR_ATTEMPTS = "postbox-prior-attempts";

  private static final String CONTENT_TYPE = "content-type";

  private AmqpHeaders() {}

  /** A persistent message's properties for {@code e}. */
  static AMQP.BasicProperties write(Envelope e) {
    Map<String, Object> headers = new LinkedHashMap<>(WIRE.write(e));
    Object contentType = headers.remove(CONTENT_TYPE);
    long ttl = e.millisToLive(java.time.Instant.now());
    return new AMQP.BasicProperties.Builder()
        .deliveryMode(2)
        .messageId(e.id())
        .contentType(contentType == null ? null : contentType.toString())
        // the event's expiry as a per-message TTL: the queue drops it unconsumed once past it
        // (copies into wait queues go without, and keep the expirytime the inbox checks)
        .expiration(ttl > 0 ? Long.toString(ttl) : null)
        .headers(headers)
        .build();
  }

  /** The same message's properties with the count of deliveries before this copy. */
  static AMQP.BasicProperties copy(AMQP.BasicProperties original, int priorAttempts) {
    Map<String, Object> headers =
        original.getHeaders() == null
            ? new LinkedHashMap<>()
            : new LinkedHashMap<>(original.getHeaders());
    headers.keySet().removeIf(name -> name.startsWith("x-"));
    headers.put(PRIOR_ATTEMPTS, priorAttempts);
    return original.builder().deliveryMode(2).expiration(null).headers(headers).build();
  }

  /**
   * Reads an envelope back.
   *
   * @throws MalformedMessageException the message is not a CloudEvent this adapter can read
   */
  static Envelope read(AMQP.BasicProperties props, byte[] body) {
    Map<String, String> raw = raw(props);
    Map<String, String> headers = new LinkedHashMap<>();
    try {
      if (props.getHeaders() != null) {
        for (Map.Entry<String, Object> h : props.getHeaders().entrySet()) {
          Object v = h.getValue();
          if (v instanceof LongString s) {
            headers.put(h.getKey(), EventRules.utf8("header " + h.getKey(), s.getBytes()));
          } else if (v instanceof String s) {
            headers.put(h.getKey(), s);
          } else if (v != null && h.getKey().startsWith(CloudEventsWire.PREFIX)) {
            headers.put(h.getKey(), v.toString());
          }
        }
      }
    } catch (InvalidEventException e) {
      throw new MalformedMessageException("invalid CloudEvent: " + e.getMessage(), body, raw, e);
    }
    if (props.getContentType() != null) {
      headers.put(CONTENT_TYPE, props.getContentType());
    }
    return WIRE.read(headers, null, body, raw);
  }

  /** The message's headers and content type as text, for a dead letter. */
  static Map<String, String> raw(AMQP.BasicProperties props) {
    Map<String, String> raw = new LinkedHashMap<>();
    if (props.getHeaders() != null) {
      props.getHeaders().forEach((k, v) -> raw.put(k, String.valueOf(v)));
    }
    if (props.getContentType() != null) {
      raw.put(CONTENT_TYPE, props.getContentType());
    }
    return raw;
  }

  /** The delivery count before this message was copied into a wait queue; 0 for an original. */
  static int priorAttempts(AMQP.BasicProperties props) {
    Object v = props.getHeaders() == null ? null : props.getHeaders().get(PRIOR_ATTEMPTS);
    return v instanceof Number n ? Math.max(0, n.intValue()) : 0;
  }

  /** Quorum queues' count of earlier deliveries of this message; 0 when absent. */
  static int deliveryCount(AMQP.BasicProperties props) {
    Object v = props.getHeaders() == null ? null : props.getHeaders().get("x-delivery-count");
    return v instanceof Number n ? Math.max(0, n.intValue()) : 0;
  }
}
