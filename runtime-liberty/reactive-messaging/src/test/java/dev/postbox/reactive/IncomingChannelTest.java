package dev.postbox.reactive;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.spi.Envelope;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import org.eclipse.microprofile.reactive.messaging.Message;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;

class IncomingChannelTest {

  private static IncomingChannel channel() {
    Map<String, String> m =
        Map.of(
            "mp.messaging.incoming.c.wait-for-subscriber", "200ms",
            "mp.messaging.incoming.c.ack-timeout", "200ms");
    return new IncomingChannel(
        ChannelSettings.incoming("c", k -> Optional.ofNullable(m.get(k))),
        IncomingChannelTest.class.getClassLoader(),
        null);
  }

  private static Envelope event(String payload) {
    return Envelope.builder().source("urn:test").type("T").key("k").payload(payload).build();
  }

  /** A subscriber that asks for {@code initial} messages and settles each as told. */
  private static final class Method implements Subscriber<Message<?>> {
    final List<Message<?>> got = new ArrayList<>();
    final Consumer<Message<?>> settle;
    final long initial;
    Subscription subscription;

    Method(long initial, Consumer<Message<?>> settle) {
      this.initial = initial;
      this.settle = settle;
    }

    @Override
    public void onSubscribe(Subscription s) {
      subscription = s;
      s.request(initial);
    }

    @Override
    public void onNext(Message<?> m) {
      got.add(m);
      settle.accept(m);
    }

    @Override
    public void onError(Throwable t) {}

    @Override
    public void onComplete() {}
  }

  @Test
  void anAckedMessageLetsTheHandlerReturnAndCarriesTheEvent() throws Exception {
    IncomingChannel c = channel();
    Method m = new Method(10, Message::ack);
    c.subscribe(m);
    Envelope e = event("hello");

    c.handle(e);

    assertThat(m.got).hasSize(1);
    assertThat(m.got.get(0).getPayload()).isEqualTo("hello");
    assertThat(m.got.get(0).unwrap(IncomingEvent.class).envelope()).isEqualTo(e);
    assertThat(m.got.get(0).unwrap(Envelope.class).id()).isEqualTo(e.id());
  }

  @Test
  void aNackFailsTheHandlerWithTheMethodsException() {
    IncomingChannel c = channel();
    c.subscribe(new Method(10, msg -> msg.nack(new IllegalArgumentException("bad order"))));

    assertThatThrownBy(() -> c.handle(event("x")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("bad order");
  }

  @Test
  void aNackWrappedByTheReflectiveCallFailsWithTheMethodsOwnException() {
    IncomingChannel c = channel();
    c.subscribe(
        new Method(
            10,
            msg ->
                msg.nack(
                    new java.util.concurrent.CompletionException(
                        new java.lang.reflect.InvocationTargetException(
                            new IllegalStateException("card declined"))))));

    assertThatThrownBy(() -> c.handle(event("x")))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("card declined");
  }

  @Test
  void withoutDemandAnEventWaitsThenFailsSoTheInboxRetriesIt() throws Exception {
    IncomingChannel c = channel();
    assertThatThrownBy(() -> c.handle(event("early")))
        .hasMessageContaining("no @Incoming method asked for event");

    Method m = new Method(1, Message::ack);
    c.subscribe(m);
    c.handle(event("one"));
    assertThatThrownBy(() -> c.handle(event("two")))
        .as("the method asked for one message only")
        .hasMessageContaining("no @Incoming method asked");
    m.subscription.request(1);
    c.handle(event("three"));
    assertThat(m.got.stream().map(x -> (Object) x.getPayload()).toList())
        .containsExactly("one", "three");
  }

  @Test
  void aMessageNeitherAckedNorNackedFailsAfterTheAckTimeout() {
    IncomingChannel c = channel();
    c.subscribe(new Method(10, msg -> {}));
    assertThatThrownBy(() -> c.handle(event("x"))).hasMessageContaining("neither acked nor nacked");
  }

  @Test
  void aCancelledSubscriptionTakesNoMoreEventsAndASecondSubscriberIsRefused() {
    IncomingChannel c = channel();
    Method first = new Method(10, Message::ack);
    c.subscribe(first);
    List<Throwable> refused = new ArrayList<>();
    c.subscribe(
        new Subscriber<Message<?>>() {
          @Override
          public void onSubscribe(Subscription s) {}

          @Override
          public void onNext(Message<?> m) {}

          @Override
          public void onError(Throwable t) {
            refused.add(t);
          }

          @Override
          public void onComplete() {}
        });
    assertThat(refused)
        .singleElement()
        .extracting(Throwable::getMessage)
        .asString()
        .contains("takes one subscriber");

    first.subscription.cancel();
    assertThatThrownBy(() -> c.handle(event("after")))
        .hasMessageContaining("ended the channel's stream");
    assertThat(first.got).isEmpty();
  }

  @Test
  void aPayloadThatDoesNotDecodeAsTheConfiguredClassIsMalformed() {
    Map<String, String> m = Map.of("mp.messaging.incoming.c.payload", Point.class.getName());
    IncomingChannel c =
        new IncomingChannel(
            ChannelSettings.incoming("c", k -> Optional.ofNullable(m.get(k))),
            IncomingChannelTest.class.getClassLoader(),
            null);
    c.subscribe(new Method(10, Message::ack));
    assertThatThrownBy(() -> c.handle(event("{\"x\": \"not a number\"}")))
        .isInstanceOf(dev.postbox.runtime.api.UnprocessableEventException.class)
        .hasMessageContaining("does not decode as " + Point.class.getName());
  }

  @Test
  void aStreamEndedWhileItHadTheEventFailsThatAttemptEvenIfAckedAndTheNextAtOnce() {
    IncomingChannel c = channel();
    Method[] self = new Method[1];
    self[0] =
        new Method(
            10,
            msg -> {
              msg.ack(); // pre-processing acknowledgement
              self[0].subscription.cancel(); // then the method threw: the stream ends
            });
    c.subscribe(self[0]);

    assertThatThrownBy(() -> c.handle(event("half-done")))
        .hasMessageContaining("ended the channel's stream");
    long start = System.nanoTime();
    assertThatThrownBy(() -> c.handle(event("next")))
        .hasMessageContaining("until the application restarts");
    assertThat(System.nanoTime() - start)
        .as("fails at once, not after wait-for-subscriber")
        .isLessThan(java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(150));
  }

  @Test
  void anEventWaitsForTheChannelsPreviousEventNoLongerThanTheWaitForSubscriber() throws Exception {
    IncomingChannel c = channel();
    java.util.concurrent.CountDownLatch inMethod = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
    c.subscribe(
        new Method(
            10,
            msg -> {
              inMethod.countDown();
              try {
                release.await();
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
              msg.ack();
            }));
    var first =
        java.util.concurrent.CompletableFuture.runAsync(
            () -> {
              try {
                c.handle(event("holds the method"));
              } catch (Exception e) {
                throw new java.util.concurrent.CompletionException(e);
              }
            });
    inMethod.await();
    try {
      assertThatThrownBy(() -> c.handle(event("behind it")))
          .hasMessageContaining("for the channel's previous event");
    } finally {
      release.countDown();
    }
    first.get(10, java.util.concurrent.TimeUnit.SECONDS);
  }

  @Test
  void aMessageSettledInsideAnotherTransactionRollsThatBackAndFailsThisAttempt() {
    FakeTransactions tx = new FakeTransactions();
    Map<String, String> m = Map.of("mp.messaging.incoming.c.ack-timeout", "5s");
    IncomingChannel c =
        new IncomingChannel(
            ChannelSettings.incoming("c", k -> Optional.ofNullable(m.get(k))),
            IncomingChannelTest.class.getClassLoader(),
            tx);
    // A merge queued the message; another event's thread, in its own transaction, runs the method.
    c.subscribe(
        new Method(
            10,
            msg ->
                new Thread(
                        () -> {
                          tx.current.set("the other event's transaction");
                          msg.ack();
                        })
                    .start()));
    tx.current.set("this event's transaction");

    assertThatThrownBy(() -> c.handle(event("merged")))
        .hasMessageContaining("inside another event's transaction");
    assertThat(tx.rolledBack).containsExactly("the other event's transaction");
  }

  @Test
  void aPayloadClassThatIsNotThereFailsAtDeploymentNamingTheKey() {
    Map<String, String> m = Map.of("mp.messaging.incoming.c.payload", "com.example.Nope");
    assertThatThrownBy(
            () ->
                new IncomingChannel(
                    ChannelSettings.incoming("c", k -> Optional.ofNullable(m.get(k))),
                    IncomingChannelTest.class.getClassLoader(),
                    null))
        .hasMessageContaining("mp.messaging.incoming.c.payload=com.example.Nope");
  }

  /** A JTA registry of a transaction key per thread; records what was marked rollback-only. */
  private static final class FakeTransactions
      implements jakarta.transaction.TransactionSynchronizationRegistry {
    final InheritableThreadLocal<Object> current = new InheritableThreadLocal<>();
    final List<Object> rolledBack = new java.util.concurrent.CopyOnWriteArrayList<>();

    @Override
    public Object getTransactionKey() {
      return current.get();
    }

    @Override
    public void putResource(Object key, Object value) {}

    @Override
    public Object getResource(Object key) {
      return null;
    }

    @Override
    public void registerInterposedSynchronization(jakarta.transaction.Synchronization sync) {}

    @Override
    public int getTransactionStatus() {
      return 0;
    }

    @Override
    public void setRollbackOnly() {
      rolledBack.add(current.get());
    }

    @Override
    public boolean getRollbackOnly() {
      return false;
    }
  }

  public static class Point {
    public int x;
  }
}
