package dev.postbox.payments.crash;

import dev.postbox.runtime.checkpoint.Checkpoint;
import dev.postbox.runtime.checkpoint.CheckpointListener;

/**
 * The crash harness's instrument: a {@link CheckpointListener} that lets a test park, hold or fail
 * the first thread to reach an armed {@link Checkpoint}. Test code only: the harness adds this
 * package, built as its own small jar ({@code *-crashpoints.jar}), to the WEB-INF/lib of its copy
 * of the WAR; the shipped WAR and the runtime jar hold nothing of it.
 *
 * <p>Off unless the JVM starts with {@code -Ddev.postbox.crashpoints=<directory>}. While on, a test
 * arms one point by writing {@code "<point> park"}, {@code "<point> hold"} or {@code "<point> fail
 * <times>"} to {@code <directory>/armed}. The first thread to reach the armed point writes {@code
 * <directory>/reached}; a parked point then holds that thread for good (the test SIGKILLs the
 * process, knowing exactly which window it killed), a held one until the file changes (the test
 * pauses the process with SIGSTOP meanwhile, then resumes it and lets the thread go on), a failing
 * one throws, as a transient failure at that point would, the given number of times. Other threads
 * and other points pass through. Writing another line arms again; deleting the file disarms.
 */
public final class CrashPoints implements CheckpointListener {

  public static final String HTTP_COMMITTED_NOT_ANSWERED =
      Checkpoint.HTTP_COMMITTED_NOT_ANSWERED.id();
  public static final String INBOX_COMMITTED_NOT_ACKED = Checkpoint.INBOX_COMMITTED_NOT_ACKED.id();
  public static final String INBOX_BEFORE_COMMIT = Checkpoint.INBOX_BEFORE_COMMIT.id();
  public static final String RELAY_PUBLISHED_NOT_MARKED =
      Checkpoint.RELAY_PUBLISHED_NOT_MARKED.id();

  private final CrashSwitch armed = CrashSwitch.from(System.getProperty("dev.postbox.crashpoints"));

  /** For {@link java.util.ServiceLoader}. */
  public CrashPoints() {}

  @Override
  public void reached(Checkpoint checkpoint) {
    if (armed != null) {
      armed.reach(checkpoint.id());
    }
  }
}
