package dev.postbox.broker.kafka;

import dev.postbox.spi.Batches;
import dev.postbox.spi.BrokerException;
import dev.postbox.spi.Capabilities;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.InvalidEventException;
import dev.postbox.spi.KeyedBatch;
import dev.postbox.spi.Publisher;
import dev.postbox.spi.RetriableBrokerException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;

/**
 * Publishes with an idempotent producer and {@code acks=all}: a returned publish is replicated to
 * every in-sync replica, and the producer's own retries cannot duplicate or reorder records.
 */
final class KafkaPublisher implements Publisher {

  private final KafkaProducer<byte[], byte[]> producer;
  private final Capabilities capabilities;
  private final Duration timeout;
  private final AtomicBoolean brokerClosed;

  KafkaPublisher(KafkaSettings settings, Capabilities capabilities, AtomicBoolean brokerClosed) {
    this.producer = new KafkaProducer<>(settings.producerProperties());
    this.capabilities = capabilities;
    // Metadata may take max.block.ms before the delivery timeout starts: allow both.
    this.timeout = settings.publishTimeout().multipliedBy(2).plusSeconds(1);
    this.brokerClosed = brokerClosed;
  }

  @Override
  public void publish(String destination, Envelope envelope) {
    Future<RecordMetadata> sent = send(destination, envelope);
    await(sent, destination);
  }

  @Override
  public void publishAll(String destination, List<Envelope> batch) {
    // Send everything first (the producer batches and pipelines), then wait for each ack.
    List<Future<RecordMetadata>> futures = new ArrayList<>(batch.size());
    KeyedBatch keyed = new KeyedBatch(batch.size());
    BrokerException topicDown = null; // a send that could not even start: no metadata in time
    for (int i = 0; i < batch.size(); i++) {
      Envelope e = batch.get(i);
      futures.add(null);
      if (topicDown != null) {
        // Every record goes to the same topic, whose metadata did not come within max.block.ms:
        // waiting that long again for each key would hold the caller for minutes.
        keyed.failed(i, Batches.notSent(topicDown));
        continue;
      }
      if (keyed.heldBack(i, e)) {
        continue;
      }
      try {
        Future<RecordMetadata> sent = send(destination, e);
        if (sent.isDone()) {
          // Done at once is failed at once: the producer returns its metadata timeout (after
          // max.block.ms) as a failed future rather than throwing it.
          await(sent, destination);
        }
        futures.set(i, sent);
      } catch (BrokerException failure) {
        keyed.stop(i, e, failure);
        if (failure.isRetriable()) {
          topicDown = failure;
        }
      }
    }
    for (int i = 0; i < futures.size(); i++) {
      if (futures.get(i) == null) {
        continue;
      }
      try {
        await(futures.get(i), destination);
      } catch (BrokerException failure) {
        keyed.failed(i, failure);
      }
    }
    keyed.finish();
  }

  private Future<RecordMetadata> send(String destination, Envelope envelope) {
    if (brokerClosed.get()) {
      throw new IllegalStateException("kafka broker is closed");
    }
    if (destination == null || destination.isBlank()) {
      throw new IllegalArgumentException("destination must not be blank");
    }
    try {
      capabilities.check(destination, envelope);
    } catch (InvalidEventException invalid) {
      throw KeyedBatch.refused(envelope, invalid);
    }
    ProducerRecord<byte[], byte[]> record =
        new ProducerRecord<>(
            destination,
            null,
            null,
            CloudEventsKafkaHeaders.keyBytes(envelope),
            envelope.payload(),
            CloudEventsKafkaHeaders.toHeaders(envelope));
    try {
      return producer.send(record);
    } catch (IllegalStateException closedProducer) {
      throw new IllegalStateException("kafka broker is closed", closedProducer);
    } catch (RuntimeException e) {
      throw KafkaErrors.map("publish to " + destination, e);
    }
  }

  private void await(Future<RecordMetadata> sent, String destination) {
    try {
      sent.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      throw KafkaErrors.map("publish to " + destination, e);
    } catch (TimeoutException e) {
      throw new RetriableBrokerException(
          "publish to " + destination + ": no acknowledgement within " + timeout, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new RetriableBrokerException("publish to " + destination + ": interrupted", e);
    }
  }

  void closeProducer() {
    producer.close(Duration.ofSeconds(5));
  }
}
