/**
 * The public API: everything an application or an operator uses, and nothing else.
 *
 * <ul>
 *   <li>Writing: {@link dev.postbox.runtime.api.Outbox} and {@link
 *       dev.postbox.runtime.api.OutboxEvent}.
 *   <li>Handling: {@link dev.postbox.runtime.api.Handles}, {@link
 *       dev.postbox.runtime.api.EventHandler}, {@link dev.postbox.runtime.api.JsonEventHandler},
 *       {@link dev.postbox.runtime.api.UnprocessableEventException}, and {@link
 *       dev.postbox.runtime.api.InboxChannels} for subscriptions declared by other means.
 *   <li>Edges: {@link dev.postbox.runtime.api.Idempotent} for idempotency keys on an endpoint.
 *   <li>Listening: {@link dev.postbox.runtime.api.RelayListener}, {@link
 *       dev.postbox.runtime.api.InboxListener} and {@link dev.postbox.runtime.api.EventTracing}.
 *   <li>Operating: {@link dev.postbox.runtime.api.OutboxOperations}, {@link
 *       dev.postbox.runtime.api.InboxOperations}, {@link
 *       dev.postbox.runtime.api.DeadLetterOperations} and their records.
 * </ul>
 *
 * <p>It stands on the SPI and Java alone (ArchitectureTest holds that), apart from the annotations
 * it carries and JSON-B in {@code JsonEventHandler}. Every other runtime package is the engine or
 * its wiring; their public types are public only because another runtime package needs them.
 */
package dev.postbox.runtime.api;
