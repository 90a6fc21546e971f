package dev.postbox.runtime.crash;

/**
 * Named places in the delivery path where a crash or a failure does the most harm, so a crash test
 * can aim at them instead of hoping a random kill lands there.
 *
 * <p>Off unless the JVM starts with {@code -Ddev.postbox.crashpoints=<directory>}; otherwise {@link
 * #reach} is a field read and nothing else. While on, a test arms one point by writing {@code
 * "<point> park"}, {@code "<point> hold"} or {@code "<point> fail <times>"} to {@code
 * <directory>/armed}. The first thread to reach the armed point writes {@code <directory>/reached};
 * a parked point then holds that thread for good (the test SIGKILLs the process, knowing exactly
 * which window it killed), a held one until the file changes (the test pauses the process with
 * SIGSTOP meanwhile, then resumes it and lets the thread go on), a failing one throws, as a
 * transient failure at that point would, the given number of times. Other threads and other points
 * pass through, so the rest of the application keeps working until the kill. Writing another line
 * arms again; deleting the file disarms.
 *
 * <p>The property is deliberately outside the {@code postbox.*} configuration: it is a test
 * instrument that only whoever controls the JVM's command line can switch on.
 */
public final class CrashPoints {

  /** An {@code @Idempotent} request's transaction has committed; it is not yet answered. */
  public static final String HTTP_COMMITTED_NOT_ANSWERED = "http.committed-not-answered";

  /** A handled event's transaction has committed; its delivery is not yet acknowledged. */
  public static final String INBOX_COMMITTED_NOT_ACKED = "inbox.committed-not-acked";

  /** A handler has run inside its transaction, which has not yet committed. */
  public static final String INBOX_BEFORE_COMMIT = "inbox.before-commit";

  /** The broker has accepted a batch; its outbox rows are not yet marked dispatched. */
  public static final String RELAY_PUBLISHED_NOT_MARKED = "relay.published-not-marked";

  private static final CrashSwitch ON =
      CrashSwitch.from(System.getProperty("dev.postbox.crashpoints"));

  private CrashPoints() {}

  /**
   * Marks that this thread is at {@code point}. Returns at once unless crash points are on and this
   * point is armed and has not fired as often as armed.
   *
   * @throws IllegalStateException when the point is armed to fail
   */
  public static void reach(String point) {
    if (ON != null) {
      ON.reach(point);
    }
  }
}
