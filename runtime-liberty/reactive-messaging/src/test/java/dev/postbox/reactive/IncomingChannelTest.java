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
        IncomingChannelTest.class.getClassLoader());
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
        .hasMessageContaining("no @Incoming method asked");
    assertThat(first.got).isEmpty();
  }

  @Test
  void aPayloadThatDoesNotDecodeAsTheConfiguredClassIsMalformed() {
    Map<String, String> m = Map.of("mp.messaging.incoming.c.payload", Point.class.getName());
    IncomingChannel c =
        new IncomingChannel(
            ChannelSettings.incoming("c", k -> Optional.ofNullable(m.get(k))),
            IncomingChannelTest.class.getClassLoader());
    c.subscribe(new Method(10, Message::ack));
    assertThatThrownBy(() -> c.handle(event("{\"x\": \"not a number\"}")))
        .isInstanceOf(dev.postbox.runtime.api.UnprocessableEventException.class)
        .hasMessageContaining("does not decode as " + Point.class.getName());
  }

  public static class Point {
    public int x;
  }
}
