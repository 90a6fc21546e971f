package dev.postbox.runtime.checkpoint;

import java.util.List;
import java.util.ServiceLoader;

/**
 * The engine's side of {@link CheckpointListener}: the listeners are found once, with the runtime's
 * own class loader; with none, {@link #reach} is a read of an empty array.
 */
public final class Checkpoints {

  private static final CheckpointListener[] LISTENERS =
      ServiceLoader.load(CheckpointListener.class, Checkpoints.class.getClassLoader()).stream()
          .map(ServiceLoader.Provider::get)
          .toList()
          .toArray(new CheckpointListener[0]);

  static {
    if (LISTENERS.length > 0) {
      System.getLogger(Checkpoints.class.getName())
          .log(
              System.Logger.Level.WARNING,
              "checkpoint listeners on the class path (test instruments, never for production): "
                  + listeners());
    }
  }

  private Checkpoints() {}

  /** The listeners found (logged as a warning when there are any). */
  public static List<String> listeners() {
    return java.util.Arrays.stream(LISTENERS).map(l -> l.getClass().getName()).toList();
  }

  /**
   * Tells every listener that this thread is at {@code checkpoint}.
   *
   * @throws RuntimeException whatever a listener throws
   */
  public static void reach(Checkpoint checkpoint) {
    for (CheckpointListener l : LISTENERS) {
      l.reached(checkpoint);
    }
  }
}
