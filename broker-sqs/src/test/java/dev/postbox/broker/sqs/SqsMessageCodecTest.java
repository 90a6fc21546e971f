package dev.postbox.broker.sqs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.spi.Envelope;
import dev.postbox.spi.MalformedMessageException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;

class SqsMessageCodecTest {

  private static Envelope.Builder base() {
    return Envelope.builder().id("e-1").source("urn:s").type("T");
  }

  @Test
  void textPayloadsTravelAsText() {
    assertThat(SqsMessageCodec.body("{\"a\":1} ✓".getBytes(StandardCharsets.UTF_8)))
        .isEqualTo("{\"a\":1} ✓");
  }

  @Test
  void binaryEmptyAndAmbiguousPayloadsTravelAsBase64() {
    assertThat(SqsMessageCodec.body(new byte[] {0, (byte) 0xff})).isEqualTo("base64:AP8=");
    assertThat(SqsMessageCodec.body(new byte[0])).isEqualTo("base64:");
    assertThat(SqsMessageCodec.body("base64:looks like ours".getBytes(StandardCharsets.UTF_8)))
        .startsWith("base64:YmFzZTY0");
    assertThat(SqsMessageCodec.body("bell \u0007".getBytes(StandardCharsets.UTF_8)))
        .startsWith("base64:");
    for (byte[] p :
        new byte[][] {{0, (byte) 0xff}, {}, "base64:x".getBytes(StandardCharsets.UTF_8)}) {
      assertThat(SqsMessageCodec.payload(SqsMessageCodec.body(p))).isEqualTo(p);
    }
  }

  @Test
  void fewAttributesStaySingle() {
    SqsMessageCodec.Encoded encoded = SqsMessageCodec.encode(base().key("k").build());
    assertThat(encoded.attributes())
        .containsKeys("ce_specversion", "ce_id", "ce_partitionkey")
        .doesNotContainKey("ce_packed");
  }

  @Test
  void moreThanTenAttributesArePackedLosslessly() {
    Envelope.Builder b = base().subject("s").key("k").dataContentType("text/plain");
    for (int i = 0; i < 8; i++) {
      b.header("x" + i, "v=" + i + "&");
    }
    Envelope e = b.build();
    SqsMessageCodec.Encoded encoded = SqsMessageCodec.encode(e);
    assertThat(encoded.attributes()).hasSize(10).containsKey("ce_packed");
    assertThat(SqsMessageCodec.decode(encoded.body(), encoded.attributes())).isEqualTo(e);
  }

  @Test
  void emptyValuesArePackedBecauseSqsRefusesThem() {
    Envelope e = base().header("blank", "").build();
    SqsMessageCodec.Encoded encoded = SqsMessageCodec.encode(e);
    assertThat(encoded.attributes()).containsKey("ce_packed").doesNotContainKey("ce_blank");
    assertThat(SqsMessageCodec.decode(encoded.body(), encoded.attributes())).isEqualTo(e);
  }

  @Test
  void sizeCountsBodyAndAttributes() {
    SqsMessageCodec.Encoded encoded = SqsMessageCodec.encode(base().payload("12345").build());
    assertThat(encoded.size()).isGreaterThan(5 + "ce_id".length() + "String".length());
  }

  @Test
  void fifoIdsAreUsedAsGivenOrHashed() {
    assertThat(SqsMessageCodec.groupId(base().key("order-7").build())).isEqualTo("order-7");
    assertThat(SqsMessageCodec.groupId(base().key("ordre é").build())).startsWith("k-").hasSize(66);
    assertThat(SqsMessageCodec.groupId(base().build())).isEqualTo("e-1");
    assertThat(SqsMessageCodec.deduplicationId(base().id("x".repeat(200)).build())).hasSize(64);
  }

  @Test
  void aMessageWithoutCloudEventsAttributesIsMalformed() {
    assertThatThrownBy(() -> SqsMessageCodec.decode("hello", Map.of()))
        .isInstanceOf(MalformedMessageException.class)
        .hasMessageContaining("no ce_specversion");
    Map<String, MessageAttributeValue> noId =
        Map.of(
            "ce_specversion",
                MessageAttributeValue.builder().dataType("String").stringValue("1.0").build(),
            "ce_time",
                MessageAttributeValue.builder()
                    .dataType("String")
                    .stringValue("2026-01-01T00:00:00Z")
                    .build());
    assertThatThrownBy(() -> SqsMessageCodec.decode("x", noId))
        .hasMessageContaining("id must not be null");
    assertThatThrownBy(() -> SqsMessageCodec.decode("base64:%%%", noId))
        .isInstanceOf(MalformedMessageException.class)
        .hasMessageContaining("not Base64");
  }
}
