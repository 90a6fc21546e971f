package dev.postbox.broker.sqs;

import dev.postbox.spi.Envelope;
import dev.postbox.spi.EventRules;
import dev.postbox.spi.InvalidEventException;
import dev.postbox.spi.WireRules;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * What SQS refuses beyond the envelope's own rules.
 *
 * <ul>
 *   <li><b>Queue names:</b> 1 to 80 ASCII letters, digits, '-' and '_', ending in {@code .fifo}
 *       exactly when this broker is FIFO; or a queue URL.
 *   <li><b>Attribute characters:</b> SQS takes only XML characters in message attributes (#x9, #xA,
 *       #xD, #x20 to #xD7FF, #xE000 to #xFFFD, #x10000 to #x10FFFF). The envelope's rules already
 *       exclude control characters and unpaired surrogates, which leaves the non-characters U+FFFE
 *       and U+FFFF.
 *   <li><b>Attribute count:</b> none beyond the envelope's: past SQS's 10 the codec packs the rest
 *       into one attribute.
 *   <li><b>Size:</b> the whole message, body (a binary payload in Base64) plus every attribute's
 *       name, type and value, within {@code max.message.bytes}.
 * </ul>
 */
final class SqsWireRules implements WireRules {

  private static final Pattern QUEUE_NAME = Pattern.compile("[A-Za-z0-9_-]{1,80}(\\.fifo)?");

  private final boolean fifo;
  private final int maxMessageBytes;

  SqsWireRules(boolean fifo, int maxMessageBytes) {
    this.fifo = fifo;
    this.maxMessageBytes = maxMessageBytes;
  }

  @Override
  public void checkDestination(String destination) {
    if (destination.endsWith(".fifo") != fifo) {
      throw new InvalidEventException(
          "destination",
          "'"
              + destination
              + "' is "
              + (fifo ? "not " : "")
              + "a FIFO queue, but this broker is configured with fifo="
              + fifo);
    }
    if (destination.startsWith("https://") || destination.startsWith("http://")) {
      return;
    }
    if (destination.length() > 80 || !QUEUE_NAME.matcher(destination).matches()) {
      throw new InvalidEventException(
          "destination",
          "is not an SQS queue name: use 1 to 80 ASCII letters, digits, '-' and '_' (with"
              + " .fifo for a FIFO queue), or the queue's URL");
    }
  }

  @Override
  public void check(Envelope e) {
    xmlCharacters("id", e.id());
    xmlCharacters("source", e.source());
    xmlCharacters("type", e.type());
    xmlCharacters("subject", e.subject());
    xmlCharacters("key", e.key());
    xmlCharacters("datacontenttype", e.dataContentType());
    for (Map.Entry<String, String> h : e.headers().entrySet()) {
      xmlCharacters("header " + h.getKey(), h.getValue());
    }
    SqsMessageCodec.Encoded encoded = SqsMessageCodec.encode(e);
    if (encoded.size() > maxMessageBytes) {
      throw new InvalidEventException(
          "payload",
          "of "
              + e.payloadSize()
              + " bytes makes an SQS message of "
              + encoded.size()
              + " bytes with its attributes, over max.message.bytes "
              + maxMessageBytes);
    }
  }

  private static void xmlCharacters(String field, String value) {
    if (value == null) {
      return;
    }
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c == '\uFFFE' || c == '\uFFFF') {
        throw new InvalidEventException(
            field,
            "contains "
                + EventRules.codePoint(c)
                + " at index "
                + i
                + ", which SQS refuses in message attributes");
      }
    }
  }
}
