package dev.postbox.runtime.api;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/** Which events an {@link EventHandler} bean takes: a destination, a consumer group, and types. */
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.TYPE)
public @interface Handles {

  /** The topic or queue; {@code ${key}} reads it from MicroProfile Config. */
  String destination();

  /**
   * The consumer group; with the destination it names the inbox subscription. {@code ${key}} reads
   * it from MicroProfile Config.
   */
  String group();

  /** The event types handled; empty for every type. */
  String[] types() default {};
}
