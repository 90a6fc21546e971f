package dev.postbox.runtime.checkpoint;

/**
 * Told when a thread of the engine reaches a {@link Checkpoint}. Registered as a {@link
 * java.util.ServiceLoader} service ({@code
 * META-INF/services/dev.postbox.runtime.checkpoint.CheckpointListener}) in a jar beside the
 * runtime. No production jar provides one: this is the socket a crash harness plugs its instrument
 * into.
 *
 * <p>A listener runs on the engine's thread, inside the window the checkpoint names: it may block
 * it (a harness then kills the process) or throw (as a transient failure at that place would).
 */
public interface CheckpointListener {

  /** This thread is at {@code checkpoint}. */
  void reached(Checkpoint checkpoint);
}
