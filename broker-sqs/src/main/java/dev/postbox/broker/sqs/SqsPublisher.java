package dev.postbox.broker.sqs;

import dev.postbox.spi.BrokerException;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.KeyedBatch;
import dev.postbox.spi.PermanentBrokerException;
import dev.postbox.spi.Publisher;
import dev.postbox.spi.RetriableBrokerException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.locks.LockSupport;
import software.amazon.awssdk.services.sqs.model.BatchResultErrorEntry;
import software.amazon.awssdk.services.sqs.model.SendMessageBatchRequest;
import software.amazon.awssdk.services.sqs.model.SendMessageBatchRequestEntry;
import software.amazon.awssdk.services.sqs.model.SendMessageBatchResponse;

/**
 * Publishes with {@code SendMessageBatch}: chunks of at most 10 entries and at most the message
 * size limit in total (SQS's batch limit). Failed entries are reported per envelope; only the
 * failed entries are retried, a few times, when SQS says the fault was not the sender's.
 */
final class SqsPublisher implements Publisher {

  static final int MAX_BATCH_ENTRIES = 10;
  static final int ENTRY_ATTEMPTS = 3;

  private final SqsBroker broker;
  private final SqsSettings settings;
  private final boolean fifo;

  SqsPublisher(SqsBroker broker, SqsSettings settings, boolean fifo) {
    this.broker = broker;
    this.settings = settings;
    this.fifo = fifo;
  }

  @Override
  public void publish(String destination, Envelope envelope) {
    Publisher.publishAsBatchOfOne(this, destination, envelope);
  }

  @Override
  public void publishAll(String destination, List<Envelope> batch) {
    if (broker.isClosed()) {
      throw new IllegalStateException("sqs broker is closed");
    }
    if (batch.isEmpty()) {
      return;
    }
    KeyedBatch keyed = new KeyedBatch(batch.size());
    String queueUrl;
    try {
      queueUrl = broker.queueUrl(destination);
    } catch (BrokerException e) {
      for (int i = 0; i < batch.size(); i++) {
        keyed.failed(i, e);
      }
      keyed.finish();
      return;
    }
    List<Entry> chunk = new ArrayList<>();
    int chunkBytes = 0;
    for (int i = 0; i < batch.size(); i++) {
      Envelope e = batch.get(i);
      if (keyed.heldBack(i, e) || keyed.refuses(i, destination, e, broker.capabilities())) {
        continue; // refused: the payload limit, the whole message's size, the characters
      }
      SqsMessageCodec.Encoded encoded = SqsMessageCodec.encode(e);
      if (chunk.size() == MAX_BATCH_ENTRIES
          || chunkBytes + encoded.size() > settings.maxMessageBytes()) {
        send(queueUrl, chunk, keyed);
        chunk = new ArrayList<>();
        chunkBytes = 0;
        if (keyed.heldBack(i, e)) {
          continue; // an earlier envelope of its key failed in the chunk that just went
        }
      }
      chunk.add(new Entry(i, e, encoded));
      chunkBytes += encoded.size();
    }
    if (!chunk.isEmpty()) {
      send(queueUrl, chunk, keyed);
    }
    keyed.finish();
  }

  private void send(String queueUrl, List<Entry> chunk, KeyedBatch keyed) {
    List<Entry> pending = new ArrayList<>(chunk);
    Set<Integer> succeeded = new HashSet<>();
    for (int attempt = 1; !pending.isEmpty(); attempt++) {
      SendMessageBatchResponse response;
      try {
        response = broker.client().sendMessageBatch(request(queueUrl, pending));
      } catch (RuntimeException e) {
        BrokerException failure = SqsErrors.map("publish to " + queueUrl, e);
        pending.forEach(p -> keyed.stop(p.index, p.envelope, failure));
        return;
      }
      response.successful().forEach(ok -> succeeded.add(Integer.parseInt(ok.id())));
      List<Entry> retry = new ArrayList<>();
      for (BatchResultErrorEntry error : response.failed()) {
        Entry entry = byIndex(pending, Integer.parseInt(error.id()));
        String message =
            "publish to "
                + queueUrl
                + ": entry "
                + entry.envelope.id()
                + " failed: "
                + error.code()
                + ": "
                + error.message();
        boolean retriable = !Boolean.TRUE.equals(error.senderFault());
        if (retriable
            && attempt < ENTRY_ATTEMPTS
            && !laterSameKeySucceeded(entry, chunk, succeeded)) {
          retry.add(entry);
        } else {
          keyed.stop(
              entry.index,
              entry.envelope,
              retriable
                  ? new RetriableBrokerException(message)
                  : new PermanentBrokerException(message));
        }
      }
      pending = retry;
      if (!pending.isEmpty()) {
        LockSupport.parkNanos(50_000_000L << attempt); // brief back-off before the retry
      }
    }
  }

  /** On a FIFO queue, re-sending an entry after a later one of its key went would reorder them. */
  private boolean laterSameKeySucceeded(Entry entry, List<Entry> chunk, Set<Integer> succeeded) {
    if (!fifo || entry.envelope.key() == null) {
      return false;
    }
    for (Entry other : chunk) {
      if (other.index > entry.index
          && entry.envelope.key().equals(other.envelope.key())
          && succeeded.contains(other.index)) {
        return true;
      }
    }
    return false;
  }

  private SendMessageBatchRequest request(String queueUrl, List<Entry> entries) {
    List<SendMessageBatchRequestEntry> out = new ArrayList<>(entries.size());
    for (Entry e : entries) {
      SendMessageBatchRequestEntry.Builder b =
          SendMessageBatchRequestEntry.builder()
              .id(Integer.toString(e.index))
              .messageBody(e.encoded.body())
              .messageAttributes(e.encoded.attributes());
      if (fifo) {
        b.messageGroupId(SqsMessageCodec.groupId(e.envelope))
            .messageDeduplicationId(SqsMessageCodec.deduplicationId(e.envelope));
      }
      out.add(b.build());
    }
    return SendMessageBatchRequest.builder().queueUrl(queueUrl).entries(out).build();
  }

  private static Entry byIndex(List<Entry> entries, int index) {
    for (Entry e : entries) {
      if (e.index == index) {
        return e;
      }
    }
    throw new IllegalStateException("SQS reported an entry id that was not sent: " + index);
  }

  private record Entry(int index, Envelope envelope, SqsMessageCodec.Encoded encoded) {}
}
