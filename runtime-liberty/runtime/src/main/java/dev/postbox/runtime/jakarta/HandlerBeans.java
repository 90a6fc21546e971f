package dev.postbox.runtime.jakarta;

import dev.postbox.runtime.api.DeadLetterReason;
import dev.postbox.runtime.api.EventHandler;
import dev.postbox.runtime.api.EventTracing;
import dev.postbox.runtime.api.Handles;
import dev.postbox.runtime.api.InboxChannels;
import dev.postbox.runtime.api.UnprocessableEventException;
import dev.postbox.runtime.inbox.InboxEngine;
import dev.postbox.spi.Envelope;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Any;
import jakarta.enterprise.inject.Instance;
import jakarta.inject.Inject;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.eclipse.microprofile.config.Config;

/**
 * Finds the inbox subscriptions among the {@link EventHandler} beans: one per destination and group
 * of their {@link Handles}, each dispatching events to the bean of their type.
 */
@ApplicationScoped
class HandlerBeans {

  @Inject @Any Instance<EventHandler> handlers;

  @Inject @Any Instance<InboxChannels> channels;

  @Inject @Any Instance<EventTracing> tracers;

  @Inject Config config;

  List<InboxEngine.Registration> registrations() {
    EventTracing tracing = PostboxRuntime.tracing(tracers);
    Map<String, Map<String, EventHandler>> bySubscription = new LinkedHashMap<>();
    Map<String, String[]> destinationAndGroup = new HashMap<>();
    for (EventHandler h : handlers) {
      Handles handles = annotation(h);
      if (handles == null) {
        throw new IllegalStateException(
            h.getClass().getName() + " implements EventHandler without @Handles");
      }
      String destination = resolve(handles.destination());
      String group = resolve(handles.group());
      String subscription = destination + "/" + group;
      destinationAndGroup.putIfAbsent(subscription, new String[] {destination, group});
      Map<String, EventHandler> byType =
          bySubscription.computeIfAbsent(subscription, s -> new HashMap<>());
      for (String type : handles.types().length == 0 ? new String[] {"*"} : handles.types()) {
        if (byType.putIfAbsent(type, h) != null) {
          throw new IllegalStateException(
              "two handlers for type '" + type + "' in subscription " + subscription);
        }
      }
    }
    List<InboxEngine.Registration> out = new ArrayList<>();
    bySubscription.forEach(
        (subscription, byType) -> {
          String[] dg = destinationAndGroup.get(subscription);
          Set<String> types = new HashSet<>(byType.keySet());
          out.add(
              new InboxEngine.Registration(
                  dg[0],
                  dg[1],
                  types.contains("*") ? Set.of() : types,
                  (connection, event) ->
                      tracing.handle(
                          subscription,
                          event,
                          () ->
                              TraceContext.handling(
                                  event, () -> handlerFor(byType, event).handle(event)))));
        });
    for (InboxChannels source : channels) {
      for (InboxChannels.Channel c : source.channels()) {
        String subscription = c.destination() + "/" + c.group();
        if (bySubscription.containsKey(subscription)) {
          throw new IllegalStateException(
              "subscription " + subscription + " is taken by both a @Handles bean and a channel");
        }
        bySubscription.put(subscription, Map.of());
        EventHandler h = c.handler();
        out.add(
            new InboxEngine.Registration(
                c.destination(),
                c.group(),
                c.types(),
                (connection, event) ->
                    tracing.handle(
                        subscription,
                        event,
                        () -> TraceContext.handling(event, () -> h.handle(event)))));
      }
    }
    return out;
  }

  /** {@code ${key}} takes the value from MicroProfile Config; anything else is literal. */
  private String resolve(String value) {
    if (value.startsWith("${") && value.endsWith("}")) {
      return config.getValue(value.substring(2, value.length() - 1), String.class);
    }
    return value;
  }

  private static EventHandler handlerFor(Map<String, EventHandler> byType, Envelope event) {
    EventHandler h = byType.get(event.type());
    if (h == null) {
      h = byType.get("*");
    }
    if (h == null) {
      // Deliveries of unknown types are dead-lettered before this; a replay of one lands here.
      throw new UnprocessableEventException(
          DeadLetterReason.UNKNOWN_TYPE, "no handler for type '" + event.type() + "'", null);
    }
    return h;
  }

  private static Handles annotation(EventHandler h) {
    for (Class<?> c = h.getClass(); c != null && c != Object.class; c = c.getSuperclass()) {
      Handles a = c.getAnnotation(Handles.class);
      if (a != null) {
        return a; // CDI proxies subclass the bean class
      }
    }
    return null;
  }
}
