/**
 * The inbox: each delivery recorded under its event id in the handler's transaction, committed
 * before it is acknowledged; duplicates skipped, failures retried and then dead-lettered.
 *
 * <p>Its flows ({@code InboxEngine}, {@code InboxProcessor}, {@code DeferredInbox}, {@code
 * DeadLetters}) use parts that do one step each ({@code Classifier}, {@code Recording}, {@code
 * FailurePolicy}, {@code KeyHolds}, {@code Stalls}), which use leaves ({@code HandlerCall}, {@code
 * Tracked}); no arrow runs back up, and ArchitectureTest holds that. SQL is in the {@code
 * *Repository} classes.
 */
package dev.postbox.runtime.inbox;
