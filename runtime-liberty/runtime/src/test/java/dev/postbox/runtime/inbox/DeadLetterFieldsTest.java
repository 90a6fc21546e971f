package dev.postbox.runtime.inbox;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.spi.Envelope;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class DeadLetterFieldsTest {

  @Test
  void anOrdinaryEventIsKeptWholeAndStaysReplayable() {
    Envelope e = Envelope.builder().source("urn:s").type("T").key("k").payload("{\"a\":1}").build();
    DeadLetterFields f = DeadLetterFields.of(e, "why", Map.of(), null, Map.of("offset", "7"));
    assertThat(f.eventId()).isEqualTo(e.id());
    assertThat(f.eventTime()).isEqualTo(e.time());
    assertThat(f.payload()).isEqualTo(e.payload());
    assertThat(f.metadata())
        .containsEntry("offset", "7")
        .containsEntry("postbox.payload.bytes", "7")
        .containsKey("postbox.payload.sha256")
        .doesNotContainKey(DeadLetterFields.TRUNCATED);
  }

  @Test
  void theLatestTimeAnEnvelopeCanHaveIsStoredAsItIs() {
    // A later one never reaches a letter's fields: the envelope refuses it, and its delivery is a
    // MALFORMED letter with the raw headers (InboxContract).
    Envelope e =
        Envelope.builder()
            .source("urn:s")
            .type("T")
            .time(dev.postbox.spi.EventRules.LATEST_TIME)
            .payload("{}")
            .build();
    DeadLetterFields f = DeadLetterFields.of(e, "why", Map.of(), null, Map.of());
    assertThat(f.eventTime()).isEqualTo(dev.postbox.spi.EventRules.LATEST_TIME);
    assertThat(f.metadata()).doesNotContainKey(DeadLetterFields.TRUNCATED);
  }

  @Test
  void nulCharactersAreEscapedAndTextsBoundedToTheirColumns() {
    Map<String, String> raw = new HashMap<>();
    raw.put("ce_id", "a\u0000b");
    DeadLetterFields f =
        DeadLetterFields.of(null, "x".repeat(10_000) + "\u0000", raw, new byte[] {1}, Map.of());
    assertThat(f.headers()).containsEntry("ce_id", "a\\u0000b");
    assertThat(f.error()).hasSize(4000).doesNotContain("\u0000");
  }

  @Test
  void hugeRawPayloadsAndHeadersAreCutButTheirSizeAndHashKept() {
    byte[] big = new byte[DeadLetterFields.MAX_PAYLOAD_BYTES + 10];
    Map<String, String> headers = new HashMap<>();
    for (int i = 0; i < 50; i++) {
      headers.put("h" + i, "v".repeat(2_000));
    }
    DeadLetterFields f = DeadLetterFields.of(null, "why", headers, big, Map.of());
    assertThat(f.payload()).hasSize(DeadLetterFields.MAX_PAYLOAD_BYTES);
    assertThat(f.metadata())
        .containsEntry("postbox.payload.bytes", Integer.toString(big.length))
        .containsEntry("postbox.payload.sha256", dev.postbox.runtime.common.Fingerprint.of(big))
        .containsEntry(DeadLetterFields.TRUNCATED, "true");
    int chars =
        f.headers().entrySet().stream()
            .mapToInt(en -> en.getKey().length() + en.getValue().length())
            .sum();
    assertThat(chars).isLessThanOrEqualTo(DeadLetterFields.MAX_MAP_CHARS);
    assertThat(f.headers()).containsKey("postbox.omitted");
  }

  @Test
  void aValidEventsLongHeadersStayWholeSoItsLetterStaysReplayable() {
    Envelope e =
        Envelope.builder()
            .source("urn:s")
            .type("T")
            .header("baggage", "b".repeat(7_000))
            .payload("{}")
            .build();
    DeadLetterFields f = DeadLetterFields.of(e, "handler failed", Map.of(), null, Map.of());
    assertThat(f.headers().get("baggage")).hasSize(7_000);
    assertThat(f.metadata()).doesNotContainKey(DeadLetterFields.TRUNCATED);
  }

  @Test
  void onlyDataErrorsLeadToAMinimalLetterAnOutageIsANack() {
    assertThat(Failures.isDataError(new RuntimeException(new java.sql.SQLException("x", "22001"))))
        .isTrue();
    assertThat(Failures.isDataError(new java.sql.SQLException("dup", "23505"))).isTrue();
    assertThat(Failures.isDataError(new java.sql.SQLException("gone", "08006"))).isFalse();
    assertThat(Failures.isDataError(new java.sql.SQLException("deadlock", "40001"))).isFalse();
  }
}
