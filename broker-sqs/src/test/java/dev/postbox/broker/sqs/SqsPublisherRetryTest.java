package dev.postbox.broker.sqs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.postbox.spi.BatchPublishException;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.RetriableBrokerException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.BatchResultErrorEntry;
import software.amazon.awssdk.services.sqs.model.SendMessageBatchRequest;
import software.amazon.awssdk.services.sqs.model.SendMessageBatchRequestEntry;
import software.amazon.awssdk.services.sqs.model.SendMessageBatchResponse;
import software.amazon.awssdk.services.sqs.model.SendMessageBatchResultEntry;

/**
 * The retry rules for per-entry failures, which a real server cannot be made to produce on demand
 * (ElasticMQ has no transient faults): a stub client stands in, in this unit test only.
 */
class SqsPublisherRetryTest {

  /** Fails the given entry ids with a server fault, once each, and records every request. */
  private static final class FlakyClient implements SqsClient {
    final List<List<String>> requests = new ArrayList<>();
    final Set<String> failOnce;
    final Set<String> refuse;

    FlakyClient(Set<String> failOnce) {
      this(failOnce, Set.of());
    }

    /** Also refuses the {@code refuse} entry ids every time, as the sender's fault. */
    FlakyClient(Set<String> failOnce, Set<String> refuse) {
      this.failOnce = new java.util.HashSet<>(failOnce);
      this.refuse = refuse;
    }

    @Override
    public SendMessageBatchResponse sendMessageBatch(SendMessageBatchRequest request) {
      requests.add(request.entries().stream().map(SendMessageBatchRequestEntry::id).toList());
      SendMessageBatchResponse.Builder r = SendMessageBatchResponse.builder();
      List<SendMessageBatchResultEntry> ok = new ArrayList<>();
      List<BatchResultErrorEntry> failed = new ArrayList<>();
      for (SendMessageBatchRequestEntry e : request.entries()) {
        if (refuse.contains(e.id())) {
          failed.add(
              BatchResultErrorEntry.builder()
                  .id(e.id())
                  .code("InvalidParameterValue")
                  .senderFault(true)
                  .message("refused")
                  .build());
        } else if (failOnce.remove(e.id())) {
          failed.add(
              BatchResultErrorEntry.builder()
                  .id(e.id())
                  .code("InternalError")
                  .senderFault(false)
                  .message("try again")
                  .build());
        } else {
          ok.add(SendMessageBatchResultEntry.builder().id(e.id()).messageId("m" + e.id()).build());
        }
      }
      return r.successful(ok).failed(failed).build();
    }

    @Override
    public String serviceName() {
      return "sqs";
    }

    @Override
    public void close() {}
  }

  private static Envelope env(String key) {
    return Envelope.builder().source("s").type("t").key(key).payload("p").build();
  }

  private static SqsBroker broker(FlakyClient client, boolean fifo) {
    return new SqsBroker(
        SqsSettings.from(Map.of("endpoint", "http://localhost:1", "fifo", Boolean.toString(fifo))),
        fifo,
        client);
  }

  @Test
  void onlyTheFailedEntriesAreRetried() {
    FlakyClient client = new FlakyClient(Set.of("1", "3"));
    try (SqsBroker broker = broker(client, false)) {
      broker
          .publisher()
          .publishAll("https://sqs.test/1/q", List.of(env("a"), env("b"), env("c"), env("d")));
    }
    assertThat(client.requests).containsExactly(List.of("0", "1", "2", "3"), List.of("1", "3"));
  }

  @Test
  void onFifoAnEntryWhoseLaterSameKeyEntryWentIsNotRetried() {
    FlakyClient client = new FlakyClient(Set.of("0"));
    BatchPublishException e;
    try (SqsBroker broker = broker(client, true)) {
      e =
          catchThrowableOfType(
              BatchPublishException.class,
              () ->
                  broker
                      .publisher()
                      .publishAll(
                          "https://sqs.test/1/q.fifo", List.of(env("k"), env("k"), env("other"))));
    }
    assertThat(client.requests).hasSize(1);
    assertThat(e.failures()).containsOnlyKeys(0);
    assertThat(e.failures().get(0)).isInstanceOf(RetriableBrokerException.class);
  }

  @Test
  void batchesAreChunkedByTen() {
    FlakyClient client = new FlakyClient(Set.of());
    List<Envelope> batch = new ArrayList<>();
    for (int i = 0; i < 23; i++) {
      batch.add(env("k" + i));
    }
    try (SqsBroker broker = broker(client, false)) {
      broker.publisher().publishAll("https://sqs.test/1/q", batch);
    }
    assertThat(client.requests).extracting(List::size).containsExactly(10, 10, 3);
  }

  @Test
  void aKeyThatFailsWhenItsChunkIsSentHoldsBackItsEnvelopeWaitingForTheNextChunk() {
    // Entry 9 (key x) closes the first chunk; entry 10 (key x too) was looked at before that
    // chunk went and failed. It must not go in the next chunk, ahead of 9's retry.
    FlakyClient client = new FlakyClient(Set.of(), Set.of("9"));
    List<Envelope> batch = new ArrayList<>();
    for (int i = 0; i < 9; i++) {
      batch.add(env("k" + i));
    }
    batch.add(env("x"));
    batch.add(env("x"));
    batch.add(env("y"));
    BatchPublishException e;
    try (SqsBroker broker = broker(client, false)) {
      e =
          catchThrowableOfType(
              BatchPublishException.class,
              () -> broker.publisher().publishAll("https://sqs.test/1/q", batch));
    }
    assertThat(e.failures()).containsOnlyKeys(9, 10);
    assertThat(client.requests.stream().flatMap(List::stream)).doesNotContain("10").contains("11");
  }
}
