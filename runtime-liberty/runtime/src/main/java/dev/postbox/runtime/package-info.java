/**
 * Postbox's assembly: {@link dev.postbox.runtime.Postbox#builder()} puts the engine together from a
 * data source, a broker and {@link dev.postbox.runtime.PostboxSettings}, for an application that
 * embeds Postbox without a container. What the assembled engine offers an application is in {@link
 * dev.postbox.runtime.api}; the Jakarta wiring builds the same engine from its beans.
 */
package dev.postbox.runtime;
