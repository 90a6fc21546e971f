package dev.postbox.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The default batch publish: per-envelope failures, and a failed key holds back its successors. */
class PublisherTest {

  private static Envelope env(String id, String key) {
    return Envelope.builder().id(id).source("s").type("t").key(key).build();
  }

  @Test
  void failedKeyHoldsBackLaterEnvelopesOfThatKeyOnly() {
    List<String> sent = new ArrayList<>();
    Publisher failsOnB1 =
        (destination, envelope) -> {
          if (envelope.id().equals("b1")) {
            throw new RetriableBrokerException("timeout");
          }
          sent.add(envelope.id());
        };
    BatchPublishException e =
        catchThrowableOfType(
            BatchPublishException.class,
            () ->
                failsOnB1.publishAll(
                    "d", List.of(env("a1", "a"), env("b1", "b"), env("a2", "a"), env("b2", "b"))));
    assertThat(sent).containsExactly("a1", "a2");
    assertThat(e.failures()).containsOnlyKeys(1, 3);
    assertThat(e.failures().get(3)).isInstanceOf(RetriableBrokerException.class);
    assertThat(e.failures().get(3).getMessage()).contains("earlier envelope with the same key");
    assertThat(e.isRetriable()).isTrue();
    assertThat(e.succeeded()).containsExactly(0, 2);
  }

  @Test
  void batchIsRetriableOnlyIfEveryFailureIs() {
    Publisher mixed =
        (destination, envelope) -> {
          throw envelope.id().equals("p")
              ? new PermanentBrokerException("too big")
              : new RetriableBrokerException("timeout");
        };
    BatchPublishException e =
        catchThrowableOfType(
            BatchPublishException.class,
            () -> mixed.publishAll("d", List.of(env("p", null), env("r", null))));
    assertThat(e.isRetriable()).isFalse();
    assertThat(e.getMessage()).startsWith("2 of 2 envelopes failed");
  }

  @Test
  void aBatchOfOneFailsWithTheEnvelopesOwnException() {
    RetriableBrokerException down = new RetriableBrokerException("broker down", null);
    Publisher batchOnly =
        new Publisher() {
          @Override
          public void publish(String destination, Envelope envelope) {
            Publisher.publishAsBatchOfOne(this, destination, envelope);
          }

          @Override
          public void publishAll(String destination, List<Envelope> batch) {
            assertThat(batch).hasSize(1);
            throw new BatchPublishException(1, java.util.Map.of(0, down));
          }
        };
    assertThat(
            catchThrowableOfType(
                RetriableBrokerException.class, () -> batchOnly.publish("q", env("a", "k"))))
        .isSameAs(down);
  }
}
