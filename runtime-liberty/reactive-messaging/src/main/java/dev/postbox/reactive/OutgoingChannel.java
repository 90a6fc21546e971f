package dev.postbox.reactive;

import dev.postbox.runtime.api.Outbox;
import dev.postbox.runtime.api.OutboxEvent;
import dev.postbox.runtime.api.Schedule;
import jakarta.transaction.TransactionSynchronizationRegistry;
import java.lang.System.Logger.Level;
import java.util.Map;
import org.eclipse.microprofile.reactive.messaging.Message;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;

/**
 * The end of an outgoing channel: each message becomes an outbox event in the JTA transaction of
 * the thread that sends it ({@code Emitter.send} runs this on the caller's thread: the subscriber
 * asks for everything up front, so nothing is buffered). The message is acked once the event is
 * recorded; the event is published after that transaction commits, and never if it rolls back.
 *
 * <p>A message that cannot be recorded is nacked, so the stage {@code send} returned fails; inside
 * a transaction, that transaction is also marked rollback-only, so the caller's business writes
 * cannot commit without their event. Outside a transaction nothing is recorded and the nack says
 * so.
 */
final class OutgoingChannel implements Subscriber<Message<?>> {

  private static final System.Logger LOG = System.getLogger(OutgoingChannel.class.getName());

  private final ChannelSettings settings;
  private final Outbox outbox;
  private final TransactionSynchronizationRegistry transactions;

  OutgoingChannel(
      ChannelSettings settings, Outbox outbox, TransactionSynchronizationRegistry transactions) {
    this.settings = settings;
    this.outbox = outbox;
    this.transactions = transactions;
  }

  @Override
  public void onSubscribe(Subscription s) {
    s.request(Long.MAX_VALUE); // never buffer: each send records on its own thread, at once
  }

  @Override
  public void onNext(Message<?> message) {
    if (transactions.getTransactionKey() == null) {
      IllegalStateException e =
          new IllegalStateException(
              "channel '"
                  + settings.channel()
                  + "' (connector postbox): a message was sent outside a JTA transaction, so it was"
                  + " not recorded and will not be published; send it from a @Transactional method"
                  + " (or inside UserTransaction.begin/commit)");
      LOG.log(Level.WARNING, e.getMessage());
      message.nack(e);
      return;
    }
    try {
      OutgoingEvent meta = EventMessage.facts(message, OutgoingEvent.class);
      Schedule schedule = meta == null || meta.schedule() == null ? Schedule.NOW : meta.schedule();
      outbox.record(event(message), schedule);
    } catch (RuntimeException e) {
      rollbackOnly();
      LOG.log(
          Level.WARNING,
          "channel '" + settings.channel() + "': the message was not recorded: " + e.getMessage());
      message.nack(e);
      return;
    }
    message.ack();
  }

  private void rollbackOnly() {
    try {
      transactions.setRollbackOnly();
    } catch (RuntimeException e) {
      LOG.log(Level.DEBUG, "marking the transaction rollback-only failed: " + e);
    }
  }

  OutboxEvent event(Message<?> message) {
    OutgoingEvent meta = EventMessage.facts(message, OutgoingEvent.class);
    Payloads.Encoded payload = Payloads.encode(message.getPayload());
    OutboxEvent.Builder b =
        OutboxEvent.builder()
            .destination(settings.destination())
            .type(meta != null && meta.type() != null ? meta.type() : settings.type())
            .contentType(payload.json() ? "application/json" : settings.contentType())
            .payload(payload.bytes());
    if (settings.source() != null) {
      b.source(settings.source());
    }
    if (meta != null) {
      if (meta.key() != null) {
        b.key(meta.key());
      }
      if (meta.subject() != null) {
        b.subject(meta.subject());
      }
      if (meta.eventId() != null) {
        b.eventId(meta.eventId());
      }
      for (Map.Entry<String, String> h : meta.headers().entrySet()) {
        b.header(h.getKey(), h.getValue());
      }
    }
    return b.build();
  }

  @Override
  public void onError(Throwable t) {
    LOG.log(Level.WARNING, "channel '" + settings.channel() + "' failed upstream: " + t);
  }

  @Override
  public void onComplete() {}
}
