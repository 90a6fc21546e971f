/**
 * What the relay, the inbox and the Jakarta wiring share, and no feature owns: the {@link
 * dev.postbox.runtime.common.RetryPolicy} that both back off by, and the one payload {@link
 * dev.postbox.runtime.common.Fingerprint}. A leaf: it imports no other runtime package.
 */
package dev.postbox.runtime.common;
