/**
 * The thin Jakarta EE wiring: CDI beans that build the engine from the container's data source, JTA
 * and configuration, subscribe the {@code @Handles} beans, and offer health checks, metrics,
 * tracing and the idempotency filter. No engine package depends on it.
 */
package dev.postbox.runtime.jakarta;
