package dev.postbox.runtime.api;

import java.util.List;
import java.util.Optional;

/** The inbox subscriptions running in this instance. */
public interface InboxOperations {

  /** In the order they started; empty when the application handles no events. */
  List<InboxSubscription> subscriptions();

  /** The subscription by its name ({@code destination/group}), if it runs here. */
  Optional<InboxSubscription> subscription(String name);
}
