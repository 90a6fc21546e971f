/**
 * Idempotency keys at an API's edge ({@code Idempotency-Key}): a claim, the work in its own
 * transaction, and the stored answer, fenced so that one effect remains.
 */
package dev.postbox.runtime.idempotency;
