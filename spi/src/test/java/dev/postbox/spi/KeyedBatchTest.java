package dev.postbox.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatNoException;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import org.junit.jupiter.api.Test;

class KeyedBatchTest {

  private static Envelope event(String id, String key) {
    return Envelope.builder().id(id).source("urn:t").type("T").key(key).payload("12345").build();
  }

  @Test
  void aKeyStopsAtItsFirstFailureAndItsLaterEnvelopesAreHeldBackAsRetriablyAsIt() {
    KeyedBatch batch = new KeyedBatch(4);
    Envelope a1 = event("a1", "a");
    assertThat(batch.heldBack(0, a1)).isFalse();
    batch.stop(0, a1, new RetriableBrokerException("down"));
    assertThat(batch.heldBack(1, event("a2", "a"))).isTrue();
    assertThat(batch.heldBack(2, event("b1", "b"))).isFalse();
    assertThat(batch.heldBack(3, event("n1", null))).isFalse();
    BatchPublishException e = catchThrowableOfType(BatchPublishException.class, batch::finish);
    assertThat(e.failures()).containsOnlyKeys(0, 1);
    assertThat(e.failures().get(1)).isInstanceOf(RetriableBrokerException.class);
    assertThat(e.succeeded()).containsExactly(2, 3);
  }

  @Test
  void aFailureAfterSendingStopsNoKeyAndANoFailureBatchFinishesQuietly() {
    KeyedBatch batch = new KeyedBatch(2);
    batch.failed(0, new PermanentBrokerException("refused"));
    assertThat(batch.heldBack(1, event("x", "k"))).isFalse();
    assertThat(batch.hasFailed(0)).isTrue();
    assertThat(batch.hasFailed(1)).isFalse();
    assertThat(catchThrowableOfType(BatchPublishException.class, batch::finish).failures())
        .containsOnlyKeys(0);
    assertThatNoException().isThrownBy(new KeyedBatch(3)::finish);
  }

  @Test
  void anEnvelopeTheCapabilitiesRefuseIsStoppedPermanentlyNamingTheRuleAndHoldsItsKeyBack() {
    Capabilities caps = Capabilities.builder().maxMessageBytes(4).build();
    KeyedBatch batch = new KeyedBatch(2);
    assertThat(batch.refuses(0, "q", event("e-9", "k"), caps)).isTrue();
    assertThat(batch.heldBack(1, event("e-10", "k"))).isTrue();
    BatchPublishException e = catchThrowableOfType(BatchPublishException.class, batch::finish);
    assertThat(e.failures().get(0))
        .isInstanceOf(PermanentBrokerException.class)
        .hasMessage(
            "envelope e-9 cannot be published: envelope payload is 5 bytes, over"
                + " this broker's limit of 4 (max.message.bytes)");
    Capabilities roomy = Capabilities.builder().maxMessageBytes(5).build();
    assertThat(new KeyedBatch(1).refuses(0, "q", event("e-1", "k"), roomy)).isFalse();
  }
}
