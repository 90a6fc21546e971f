package dev.postbox.reactive;

import dev.postbox.runtime.api.InboxChannels;
import dev.postbox.runtime.api.Outbox;
import jakarta.annotation.Resource;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.transaction.TransactionSynchronizationRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.eclipse.microprofile.config.Config;
import org.eclipse.microprofile.reactive.messaging.Message;
import org.eclipse.microprofile.reactive.messaging.spi.Connector;
import org.eclipse.microprofile.reactive.messaging.spi.ConnectorFactory;
import org.eclipse.microprofile.reactive.messaging.spi.IncomingConnectorFactory;
import org.eclipse.microprofile.reactive.messaging.spi.OutgoingConnectorFactory;
import org.eclipse.microprofile.reactive.streams.operators.PublisherBuilder;
import org.eclipse.microprofile.reactive.streams.operators.ReactiveStreams;
import org.eclipse.microprofile.reactive.streams.operators.SubscriberBuilder;

/**
 * The Reactive Messaging connector {@code postbox}: an outgoing channel records outbox events in
 * the sender's JTA transaction; an incoming channel is an inbox subscription whose events reach the
 * channel's {@code @Incoming} method inside the inbox's transaction. See {@code
 * docs/reactive-messaging.md} for the configuration and the guarantees.
 *
 * <pre>
 * mp.messaging.outgoing.order-events.connector=postbox
 * mp.messaging.outgoing.order-events.destination=orders
 * mp.messaging.outgoing.order-events.type=OrderPlaced
 * mp.messaging.incoming.charges.connector=postbox
 * mp.messaging.incoming.charges.destination=orders
 * mp.messaging.incoming.charges.group=billing
 * </pre>
 *
 * <p>The incoming channels are read from MicroProfile Config when Postbox starts (as the runtime
 * finds {@code @Handles} beans), so a channel's subscription exists whether or not Reactive
 * Messaging has connected the channel yet; its events wait for the method's demand.
 */
@ApplicationScoped
@Connector(ChannelSettings.CONNECTOR)
public class PostboxConnector
    implements IncomingConnectorFactory, OutgoingConnectorFactory, InboxChannels {

  @Inject Config config;

  @Inject Outbox outbox;

  @Resource(lookup = "java:comp/TransactionSynchronizationRegistry")
  TransactionSynchronizationRegistry transactions;

  private final Map<String, IncomingChannel> incoming = new ConcurrentHashMap<>();

  @Override
  public List<Channel> channels() {
    List<Channel> out = new ArrayList<>();
    for (String name :
        ChannelSettings.incomingChannels(
            config.getPropertyNames(), k -> config.getOptionalValue(k, String.class))) {
      IncomingChannel c = incoming(name);
      ChannelSettings s = c.settings();
      out.add(new Channel(s.destination(), s.group(), s.types(), c));
    }
    return out;
  }

  @Override
  public PublisherBuilder<? extends Message<?>> getPublisherBuilder(Config channelConfig) {
    String name = channelConfig.getValue(ConnectorFactory.CHANNEL_NAME_ATTRIBUTE, String.class);
    if (channelConfig.getOptionalValue("broadcast", Boolean.class).orElse(false)) {
      // Each subscriber would run the event in a transaction of its own, or in none: the inbox
      // could not commit one record with all their effects.
      throw new IllegalArgumentException(
          "mp.messaging.incoming."
              + name
              + ".broadcast=true: a postbox channel feeds one method, in the inbox's"
              + " transaction; declare a channel (with a group of its own) per method instead");
    }
    return ReactiveStreams.fromPublisher(incoming(name));
  }

  @Override
  public SubscriberBuilder<? extends Message<?>, Void> getSubscriberBuilder(Config channelConfig) {
    String name = channelConfig.getValue(ConnectorFactory.CHANNEL_NAME_ATTRIBUTE, String.class);
    ChannelSettings s =
        ChannelSettings.outgoing(name, k -> config.getOptionalValue(k, String.class));
    return ReactiveStreams.fromSubscriber(new OutgoingChannel(s, outbox, transactions));
  }

  private IncomingChannel incoming(String name) {
    return incoming.computeIfAbsent(
        name,
        n ->
            new IncomingChannel(
                ChannelSettings.incoming(n, k -> config.getOptionalValue(k, String.class)),
                Thread.currentThread().getContextClassLoader(),
                transactions));
  }
}
