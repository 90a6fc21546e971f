package dev.postbox.broker.sqs;

import dev.postbox.spi.CloudEventsWire;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.MalformedMessageException;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;

/**
 * Maps envelopes to SQS messages and back, losslessly, within SQS's limits.
 *
 * <ul>
 *   <li><b>Body.</b> SQS bodies are text. A payload that is valid UTF-8 made of characters SQS
 *       accepts travels as it is, so JSON stays readable; anything else (binary, empty, or text
 *       that happens to start with the marker) travels as {@code base64:<data>}.
 *   <li><b>Attributes</b> use the CloudEvents names with a {@code ce_} prefix, as in the Kafka
 *       binding: {@code ce_specversion}, {@code ce_id}, {@code ce_source}, {@code ce_type}, {@code
 *       ce_time}, {@code ce_datacontenttype}, {@code ce_subject}, {@code ce_partitionkey} (the key)
 *       and {@code ce_<extension>}; {@code traceparent}/{@code tracestate} keep their W3C names.
 *   <li><b>The 10-attribute limit.</b> When there are more than 10, or a value is empty (SQS
 *       rejects empty attribute values), the first nine non-empty ones stay single and the rest are
 *       packed into {@code ce_packed} as URL-encoded {@code name=value&...}.
 * </ul>
 */
final class SqsMessageCodec {

  static final int MAX_ATTRIBUTES = 10;
  static final String BASE64 = "base64:";
  static final String PACKED = "ce_packed";
  private static final CloudEventsWire WIRE =
      CloudEventsWire.binding(
          "attribute",
          CloudEventsWire.PREFIX + "datacontenttype",
          CloudEventsWire.PREFIX + "partitionkey");
  private static final List<String> FIRST =
      List.of(
          "ce_specversion",
          "ce_id",
          "ce_source",
          "ce_type",
          "ce_time",
          Envelope.TRACEPARENT,
          Envelope.TRACESTATE);
  private static final Pattern SQS_ID = Pattern.compile("[\\p{Alnum}\\p{Punct}]{1,128}");

  private SqsMessageCodec() {}

  /**
   * The encoded message and its size as SQS counts it (body plus attribute names, types, values).
   */
  record Encoded(String body, Map<String, MessageAttributeValue> attributes, int size) {}

  static Encoded encode(Envelope e) {
    String body = body(e.payload());
    Map<String, String> written = WIRE.write(e);
    // The required attributes and the W3C trace context first: they stay single when packing.
    Map<String, String> all = new LinkedHashMap<>();
    for (String name : FIRST) {
      if (written.containsKey(name)) {
        all.put(name, written.get(name));
      }
    }
    all.putAll(written);

    Map<String, String> single = new LinkedHashMap<>();
    Map<String, String> packed = new LinkedHashMap<>();
    boolean mustPack = all.size() > MAX_ATTRIBUTES || all.containsValue("");
    for (Map.Entry<String, String> a : all.entrySet()) {
      boolean room = !mustPack || single.size() < MAX_ATTRIBUTES - 1;
      if (room && !a.getValue().isEmpty()) {
        single.put(a.getKey(), a.getValue());
      } else {
        packed.put(a.getKey(), a.getValue());
      }
    }
    if (!packed.isEmpty()) {
      single.put(PACKED, pack(packed));
    }
    Map<String, MessageAttributeValue> attributes = new LinkedHashMap<>();
    int size = body.getBytes(StandardCharsets.UTF_8).length;
    for (Map.Entry<String, String> a : single.entrySet()) {
      attributes.put(
          a.getKey(),
          MessageAttributeValue.builder().dataType("String").stringValue(a.getValue()).build());
      size +=
          a.getKey().length()
              + "String".length()
              + a.getValue().getBytes(StandardCharsets.UTF_8).length;
    }
    return new Encoded(body, attributes, size);
  }

  /**
   * Reads an envelope back.
   *
   * @throws MalformedMessageException when the message is not a valid CloudEvent
   */
  static Envelope decode(String body, Map<String, MessageAttributeValue> attributes) {
    Map<String, String> raw = new LinkedHashMap<>();
    attributes.forEach((k, v) -> raw.put(k, v.stringValue() == null ? "" : v.stringValue()));
    byte[] payload;
    try {
      payload = payload(body == null ? "" : body);
    } catch (IllegalArgumentException badBase64) {
      throw new MalformedMessageException(
          "body starts with base64: but is not Base64", bytes(body), raw, badBase64);
    }
    Map<String, String> headers = new LinkedHashMap<>(raw);
    String packed = headers.remove(PACKED);
    if (packed != null) {
      try {
        headers.putAll(unpack(packed)); // after the singles: the publisher's header order
      } catch (IllegalArgumentException e) {
        throw new MalformedMessageException("ce_packed is not URL-encoded", payload, raw, e);
      }
    }
    return WIRE.read(headers, null, payload, raw);
  }

  /** The FIFO message group: the key when SQS accepts it as an id, else a hash of it. */
  static String groupId(Envelope e) {
    return e.key() != null ? sqsId("k-", e.key()) : sqsId("id-", e.id());
  }

  /** The FIFO deduplication id: the event id when SQS accepts it, else a hash of it. */
  static String deduplicationId(Envelope e) {
    return sqsId("", e.id());
  }

  private static String sqsId(String hashPrefix, String value) {
    if (SQS_ID.matcher(value).matches()) {
      return value;
    }
    try {
      byte[] digest =
          MessageDigest.getInstance("SHA-256").digest(value.getBytes(StandardCharsets.UTF_8));
      return hashPrefix + HexFormat.of().formatHex(digest);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  static String body(byte[] payload) {
    String text = asSqsText(payload);
    return text != null ? text : BASE64 + Base64.getEncoder().encodeToString(payload);
  }

  static byte[] payload(String body) {
    return body.startsWith(BASE64)
        ? Base64.getDecoder().decode(body.substring(BASE64.length()))
        : body.getBytes(StandardCharsets.UTF_8);
  }

  /** The payload as text if it is strict UTF-8 of characters SQS accepts; otherwise null. */
  private static String asSqsText(byte[] payload) {
    if (payload.length == 0) {
      return null;
    }
    String text;
    try {
      text =
          StandardCharsets.UTF_8
              .newDecoder()
              .onMalformedInput(CodingErrorAction.REPORT)
              .onUnmappableCharacter(CodingErrorAction.REPORT)
              .decode(ByteBuffer.wrap(payload))
              .toString();
    } catch (CharacterCodingException e) {
      return null;
    }
    if (text.startsWith(BASE64)) {
      return null;
    }
    boolean allowed =
        text.codePoints()
            .allMatch(
                c ->
                    c == 0x9
                        || c == 0xA
                        || c == 0xD
                        || (c >= 0x20 && c <= 0xD7FF)
                        || (c >= 0xE000 && c <= 0xFFFD)
                        || (c >= 0x10000 && c <= 0x10FFFF));
    return allowed ? text : null;
  }

  private static String pack(Map<String, String> values) {
    StringBuilder s = new StringBuilder();
    for (Map.Entry<String, String> v : values.entrySet()) {
      if (!s.isEmpty()) {
        s.append('&');
      }
      s.append(URLEncoder.encode(v.getKey(), StandardCharsets.UTF_8))
          .append('=')
          .append(URLEncoder.encode(v.getValue(), StandardCharsets.UTF_8));
    }
    return s.toString();
  }

  private static Map<String, String> unpack(String packed) {
    Map<String, String> values = new LinkedHashMap<>();
    for (String pair : packed.split("&")) {
      if (pair.isEmpty()) {
        continue;
      }
      int eq = pair.indexOf('=');
      if (eq < 0) {
        throw new IllegalArgumentException("no '=' in " + pair);
      }
      values.put(
          URLDecoder.decode(pair.substring(0, eq), StandardCharsets.UTF_8),
          URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
    }
    return values;
  }

  private static byte[] bytes(String body) {
    return body == null ? new byte[0] : body.getBytes(StandardCharsets.UTF_8);
  }
}
