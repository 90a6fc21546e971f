package dev.postbox.broker.rabbitmq;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import dev.postbox.spi.BrokerException;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.KeyedBatch;
import dev.postbox.spi.PermanentBrokerException;
import dev.postbox.spi.Publisher;
import java.io.IOException;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.TimeoutException;

/**
 * Publishes persistent messages to the default exchange, routed by the shard queue's name, on
 * channels in confirm mode with the {@code mandatory} flag. A batch is sent pipelined and waited
 * for once: a publish returns when the server confirmed every message, i.e. stored it in every
 * replica of a quorum queue, or on disk for a classic one. A message the server returns as
 * unroutable (its queue was deleted) fails permanently, naming the destination; a nack or a timeout
 * fails the batch retriably. Channels are single-threaded, so each call borrows one from a small
 * pool; a channel that failed is thrown away.
 */
final class RabbitMqPublisher implements Publisher {

  private final RabbitMqBroker broker;
  private final RabbitMqSettings settings;
  private final ConcurrentLinkedDeque<PublishChannel> idle = new ConcurrentLinkedDeque<>();
  private Connection connection; // guarded by this

  RabbitMqPublisher(RabbitMqBroker broker, RabbitMqSettings settings) {
    this.broker = broker;
    this.settings = settings;
  }

  @Override
  public void publish(String destination, Envelope envelope) {
    Publisher.publishAsBatchOfOne(this, destination, envelope);
  }

  @Override
  public void publishAll(String destination, List<Envelope> batch) {
    broker.checkOpen();
    if (destination == null || destination.isBlank()) {
      throw new IllegalArgumentException("destination must not be blank");
    }
    if (batch.isEmpty()) {
      return;
    }
    KeyedBatch keyed = new KeyedBatch(batch.size());
    List<Integer> sendable = keyed.sendable(destination, batch, broker.capabilities());
    if (!sendable.isEmpty()) {
      send(destination, batch, sendable, keyed);
    }
    keyed.finish();
  }

  private void send(
      String destination, List<Envelope> batch, List<Integer> sendable, KeyedBatch keyed) {
    PublishChannel ch = null;
    try {
      Connection c = connection();
      broker.prepare(c, destination);
      ch = borrow(c);
      ch.returned.clear();
      ch.interrupted = false;
      for (int i : sendable) {
        Envelope e = batch.get(i);
        ch.channel.basicPublish(
            "", broker.shards().queueOf(destination, e), true, AmqpHeaders.write(e), e.payload());
      }
      ch.channel.waitForConfirmsOrDie(settings.publishTimeout().toMillis());
      if (ch.interrupted) {
        // The connection recovered during the batch: the confirms waited for cover only what was
        // sent after it, so the ones before may be lost.
        throw new IOException("the connection was lost and recovered during the batch");
      }
      boolean anyReturned = false;
      for (int i : sendable) {
        if (ch.returned.contains(batch.get(i).id())) {
          anyReturned = true;
          keyed.failed(
              i,
              new PermanentBrokerException(
                  "envelope "
                      + batch.get(i).id()
                      + " was returned unroutable: no shard queue of destination '"
                      + destination
                      + "' exists (deleted after it was declared?)"));
        }
      }
      if (anyReturned) {
        broker.forget(destination); // a retry declares the queues again (with declare=true)
      }
      idle.push(ch);
    } catch (BrokerException e) {
      discard(ch);
      sendable.forEach(i -> keyed.failed(i, e));
    } catch (IOException | TimeoutException | InterruptedException | RuntimeException e) {
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      discard(ch); // the confirms are in doubt: a retry may publish some twice
      BrokerException failure = RabbitMqErrors.map("publish to " + destination, e);
      sendable.forEach(i -> keyed.failed(i, failure));
    }
  }

  private synchronized Connection connection() {
    broker.checkOpen();
    if (connection == null) {
      connection = broker.connect("publisher");
    }
    return connection;
  }

  private PublishChannel borrow(Connection c) throws IOException {
    PublishChannel ch = idle.poll();
    while (ch != null && !ch.channel.isOpen()) {
      discard(ch); // unregisters it from the connection, which would reopen it at a recovery
      ch = idle.poll();
    }
    return ch != null ? ch : new PublishChannel(c.createChannel());
  }

  private void discard(PublishChannel ch) {
    if (ch != null) {
      RabbitMqBroker.closeQuietly(ch.channel);
    }
  }

  synchronized void closeAll() {
    PublishChannel ch;
    while ((ch = idle.poll()) != null) {
      discard(ch);
    }
    RabbitMqBroker.closeQuietly(connection);
    connection = null;
  }

  /** A channel in confirm mode, with the ids of the messages the server returned unroutable. */
  private static final class PublishChannel {
    final Channel channel;
    final Set<String> returned = ConcurrentHashMap.newKeySet();
    volatile boolean interrupted;

    PublishChannel(Channel channel) throws IOException {
      this.channel = channel;
      channel.addShutdownListener(cause -> interrupted = true);
      channel.confirmSelect();
      channel.addReturnListener(
          r -> returned.add(String.valueOf(r.getProperties().getMessageId())));
    }
  }
}
