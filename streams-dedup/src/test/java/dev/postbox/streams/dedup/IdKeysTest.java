package dev.postbox.streams.dedup;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.util.HashSet;
import java.util.Set;
import java.util.UUID;
import org.apache.kafka.common.utils.Bytes;
import org.junit.jupiter.api.Test;

class IdKeysTest {

  private final IdKeys keys = new IdKeys();

  @Test
  void aCanonicalUuidIsStoredAsItsSixteenBytes() {
    UUID id = UUID.fromString("0f8fad5b-d9cb-469f-a165-70867728950e");
    byte[] expected =
        ByteBuffer.allocate(16)
            .putLong(id.getMostSignificantBits())
            .putLong(id.getLeastSignificantBits())
            .array();
    assertThat(keys.of(id.toString()).get()).isEqualTo(expected);
  }

  @Test
  void otherIdsAreHashedToSixteenStableBytesAndStayApart() {
    Set<Bytes> seen = new HashSet<>();
    for (int i = 0; i < 10_000; i++) {
      Bytes k = keys.of("order-" + i);
      assertThat(k.get()).hasSize(16);
      assertThat(new IdKeys().of("order-" + i))
          .as("the same key in another processor")
          .isEqualTo(k);
      seen.add(k);
    }
    assertThat(seen).hasSize(10_000);
  }

  @Test
  void idsAreCaseSensitiveAndOnlyTheCanonicalFormIsParsed() {
    String lower = "0f8fad5b-d9cb-469f-a165-70867728950e";
    assertThat(keys.of(lower.toUpperCase())).isNotEqualTo(keys.of(lower));
    assertThat(IdKeys.isCanonicalUuid(lower)).isTrue();
    assertThat(IdKeys.isCanonicalUuid(lower.toUpperCase())).isFalse();
    assertThat(IdKeys.isCanonicalUuid("0f8fad5bd9cb-469f-a165-70867728950e-")).isFalse();
    assertThat(IdKeys.isCanonicalUuid("0f8fad5b-d9cb-469f-a165-70867728950")).isFalse();
    assertThat(IdKeys.isCanonicalUuid("0f8fad5b-d9cb-469f-a165-70867728950g")).isFalse();
  }
}
