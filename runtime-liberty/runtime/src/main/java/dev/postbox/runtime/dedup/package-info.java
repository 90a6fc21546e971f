/**
 * The inbox's dedup front: an in-memory set of recently processed event ids that acknowledges a
 * copy without a database round trip. The database stays the authority; the front only answers
 * "seen and committed".
 */
package dev.postbox.runtime.dedup;
