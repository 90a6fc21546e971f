package dev.postbox.runtime.api;

import java.util.List;
import java.util.Set;

/**
 * Inbox subscriptions declared by other means than {@link Handles} beans, such as the Reactive
 * Messaging connector's incoming channels: implement it on a CDI bean. The runtime asks every such
 * bean once, when Postbox starts, and subscribes each channel as it does a {@link Handles} bean:
 * its handler runs inside the JTA transaction that records the event in the inbox.
 */
public interface InboxChannels {

  /**
   * One inbox subscription.
   *
   * @param destination the topic or queue
   * @param group the consumer group; with the destination it names the subscription
   * @param types the event types taken; empty for every type
   * @param handler called for each event, inside the inbox's transaction
   */
  record Channel(String destination, String group, Set<String> types, EventHandler handler) {
    public Channel {
      types = Set.copyOf(types);
    }
  }

  /**
   * The subscriptions; a destination and group must not also be taken by a {@link Handles} bean.
   */
  List<Channel> channels();
}
