package dev.postbox.broker.sqs;

import dev.postbox.spi.Consumer;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Subscription;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import software.amazon.awssdk.services.sqs.model.ChangeMessageVisibilityBatchRequest;
import software.amazon.awssdk.services.sqs.model.ChangeMessageVisibilityBatchRequestEntry;
import software.amazon.awssdk.services.sqs.model.ChangeMessageVisibilityRequest;
import software.amazon.awssdk.services.sqs.model.DeleteMessageBatchRequest;
import software.amazon.awssdk.services.sqs.model.DeleteMessageBatchRequestEntry;
import software.amazon.awssdk.services.sqs.model.DeleteMessageBatchResponse;
import software.amazon.awssdk.services.sqs.model.Message;
import software.amazon.awssdk.services.sqs.model.MessageSystemAttributeName;
import software.amazon.awssdk.services.sqs.model.ReceiveMessageRequest;

/**
 * Long-polls one queue. An ack is a {@code DeleteMessage}, sent in batches of up to 10; a nack is a
 * {@code ChangeMessageVisibility} to the delay. While a delivery is unsettled, a heartbeat keeps
 * extending its visibility timeout, so a slow handler does not see its message handed to another
 * consumer. Deletes, visibility changes and heartbeats all run on one scheduler thread, in order,
 * so a heartbeat can never undo a nack that came after it.
 */
final class SqsSubscriptionConsumer implements Consumer {

  private static final System.Logger LOG =
      System.getLogger(SqsSubscriptionConsumer.class.getName());
  private static final int MAX_RECEIVE = 10;

  private final SqsBroker broker;
  private final SqsSettings settings;
  private final Subscription subscription;
  private final String queueUrl;
  private final java.util.function.Consumer<SqsSubscriptionConsumer> onClose;
  private final Set<SqsDelivery> inFlight = ConcurrentHashMap.newKeySet();
  private final ConcurrentLinkedQueue<SqsDelivery> pendingDeletes = new ConcurrentLinkedQueue<>();
  private final ScheduledExecutorService scheduler;
  private final AtomicBoolean closed = new AtomicBoolean();

  SqsSubscriptionConsumer(
      SqsBroker broker,
      SqsSettings settings,
      Subscription subscription,
      String queueUrl,
      java.util.function.Consumer<SqsSubscriptionConsumer> onClose) {
    this.broker = broker;
    this.settings = settings;
    this.subscription = subscription;
    this.queueUrl = queueUrl;
    this.onClose = onClose;
    this.scheduler =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "postbox-sqs-" + subscription.destination());
              t.setDaemon(true);
              return t;
            });
    scheduler.scheduleWithFixedDelay(this::flushDeletes, 100, 100, TimeUnit.MILLISECONDS);
    if (settings.heartbeat()) {
      long every = settings.heartbeatInterval().toMillis();
      scheduler.scheduleWithFixedDelay(this::heartbeat, every, every, TimeUnit.MILLISECONDS);
    }
  }

  @Override
  public Subscription subscription() {
    return subscription;
  }

  @Override
  public List<Delivery> poll(int maxDeliveries, Duration timeout) {
    if (maxDeliveries < 1) {
      throw new IllegalArgumentException("maxDeliveries must be >= 1: " + maxDeliveries);
    }
    checkOpen();
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      checkOpen();
      int room =
          Math.min(
              Math.min(maxDeliveries, MAX_RECEIVE), subscription.maxInFlight() - inFlight.size());
      long remaining = deadline - System.nanoTime();
      if (room <= 0) {
        if (remaining <= 0) {
          return List.of();
        }
        LockSupport.parkNanos(Math.min(remaining, TimeUnit.MILLISECONDS.toNanos(100)));
        continue;
      }
      int waitSeconds =
          (int)
              Math.min(
                  settings.waitTime().toSeconds(),
                  TimeUnit.NANOSECONDS.toSeconds(Math.max(0, remaining)));
      List<Delivery> got = receive(room, waitSeconds);
      if (!got.isEmpty() || System.nanoTime() >= deadline) {
        return got;
      }
      if (waitSeconds == 0) {
        // Less than a second left: SQS long polling works in whole seconds, so wait it out here.
        LockSupport.parkNanos(
            Math.min(deadline - System.nanoTime(), TimeUnit.MILLISECONDS.toNanos(100)));
      }
    }
  }

  private List<Delivery> receive(int max, int waitSeconds) {
    ReceiveMessageRequest request =
        ReceiveMessageRequest.builder()
            .queueUrl(queueUrl)
            .maxNumberOfMessages(max)
            .waitTimeSeconds(waitSeconds)
            .visibilityTimeout((int) settings.visibilityTimeout().toSeconds())
            .messageSystemAttributeNames(
                MessageSystemAttributeName.APPROXIMATE_RECEIVE_COUNT,
                MessageSystemAttributeName.MESSAGE_GROUP_ID,
                MessageSystemAttributeName.SENT_TIMESTAMP)
            .messageAttributeNames("All")
            .overrideConfiguration(
                o ->
                    o.apiCallTimeout(
                        Duration.ofSeconds(waitSeconds).plus(settings.publishTimeout())))
            .build();
    List<Message> messages;
    try {
      messages = broker.client().receiveMessage(request).messages();
    } catch (RuntimeException e) {
      if (closed.get()) {
        return List.of();
      }
      throw SqsErrors.map("receive from " + queueUrl, e);
    }
    List<Delivery> out = new ArrayList<>(messages.size());
    for (Message m : messages) {
      SqsDelivery d = new SqsDelivery(this, m);
      inFlight.add(d);
      out.add(d);
    }
    return out;
  }

  Duration maxNackDelay() {
    return settings.maxNackDelay();
  }

  void ack(SqsDelivery d) {
    if (inFlight.remove(d) && !closed.get()) {
      pendingDeletes.add(d);
    }
  }

  void nack(SqsDelivery d, Duration delay) {
    if (inFlight.remove(d) && !closed.get()) {
      // Whole seconds, rounded up: the delay is a lower bound.
      int seconds = (int) Math.min(43_200, (delay.toMillis() + 999) / 1000);
      scheduler.execute(() -> changeVisibility(d, seconds));
    }
  }

  private void changeVisibility(SqsDelivery d, int seconds) {
    try {
      broker
          .client()
          .changeMessageVisibility(
              ChangeMessageVisibilityRequest.builder()
                  .queueUrl(queueUrl)
                  .receiptHandle(d.receiptHandle())
                  .visibilityTimeout(seconds)
                  .build());
    } catch (RuntimeException e) {
      // The message comes back when its visibility timeout ends anyway; nothing is lost.
      LOG.log(
          Level.WARNING, "nack of " + d + " failed; it returns after its visibility timeout: " + e);
    }
  }

  private void flushDeletes() {
    List<SqsDelivery> batch = new ArrayList<>(MAX_RECEIVE);
    SqsDelivery d;
    while ((d = pendingDeletes.poll()) != null) {
      batch.add(d);
      if (batch.size() == MAX_RECEIVE) {
        delete(batch);
        batch = new ArrayList<>(MAX_RECEIVE);
      }
    }
    if (!batch.isEmpty()) {
      delete(batch);
    }
  }

  private void delete(List<SqsDelivery> batch) {
    List<DeleteMessageBatchRequestEntry> entries = new ArrayList<>(batch.size());
    for (int i = 0; i < batch.size(); i++) {
      entries.add(
          DeleteMessageBatchRequestEntry.builder()
              .id(Integer.toString(i))
              .receiptHandle(batch.get(i).receiptHandle())
              .build());
    }
    try {
      DeleteMessageBatchResponse response =
          broker
              .client()
              .deleteMessageBatch(
                  DeleteMessageBatchRequest.builder().queueUrl(queueUrl).entries(entries).build());
      response
          .failed()
          .forEach(
              f ->
                  LOG.log(
                      Level.WARNING,
                      "ack (delete) failed for "
                          + batch.get(Integer.parseInt(f.id()))
                          + ": "
                          + f.code()
                          + "; it will be redelivered"));
    } catch (RuntimeException e) {
      // Redelivery makes up for a lost ack; the inbox skips the duplicate.
      LOG.log(
          Level.WARNING,
          "acks (deletes) failed for "
              + batch.size()
              + " deliveries; they will be redelivered: "
              + e);
    }
  }

  private void heartbeat() {
    List<SqsDelivery> held = new ArrayList<>(inFlight);
    setVisibility(held, (int) settings.visibilityTimeout().toSeconds(), "heartbeat");
  }

  private void setVisibility(List<SqsDelivery> deliveries, int seconds, String why) {
    for (int from = 0; from < deliveries.size(); from += MAX_RECEIVE) {
      List<SqsDelivery> chunk =
          deliveries.subList(from, Math.min(deliveries.size(), from + MAX_RECEIVE));
      List<ChangeMessageVisibilityBatchRequestEntry> entries = new ArrayList<>(chunk.size());
      for (int i = 0; i < chunk.size(); i++) {
        entries.add(
            ChangeMessageVisibilityBatchRequestEntry.builder()
                .id(Integer.toString(i))
                .receiptHandle(chunk.get(i).receiptHandle())
                .visibilityTimeout(seconds)
                .build());
      }
      try {
        broker
            .client()
            .changeMessageVisibilityBatch(
                ChangeMessageVisibilityBatchRequest.builder()
                    .queueUrl(queueUrl)
                    .entries(entries)
                    .build());
      } catch (RuntimeException e) {
        LOG.log(Level.WARNING, why + " failed for " + chunk.size() + " deliveries: " + e);
      }
    }
  }

  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    scheduler.shutdown();
    try {
      scheduler.awaitTermination(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    flushDeletes();
    // Give unsettled deliveries back now rather than after their visibility timeout.
    List<SqsDelivery> unsettled = new ArrayList<>(inFlight);
    inFlight.clear();
    setVisibility(unsettled, 0, "release on close");
    onClose.accept(this);
  }

  private void checkOpen() {
    if (closed.get()) {
      throw new IllegalStateException("sqs consumer is closed");
    }
  }
}
