package dev.postbox.runtime.checkpoint;

/**
 * Named places in the delivery path where a crash or a failure does the most harm. The engine
 * reports reaching each to the {@link CheckpointListener}s on its class path (none in production),
 * so a crash test can aim a kill at one instead of hoping a random kill lands there.
 */
public enum Checkpoint {

  /** An {@code @Idempotent} request's transaction has committed; it is not yet answered. */
  HTTP_COMMITTED_NOT_ANSWERED("http.committed-not-answered"),

  /** A handled event's transaction has committed; its delivery is not yet acknowledged. */
  INBOX_COMMITTED_NOT_ACKED("inbox.committed-not-acked"),

  /** A handler has run inside its transaction, which has not yet committed. */
  INBOX_BEFORE_COMMIT("inbox.before-commit"),

  /** The broker has accepted a batch; its outbox rows are not yet marked dispatched. */
  RELAY_PUBLISHED_NOT_MARKED("relay.published-not-marked");

  private final String id;

  Checkpoint(String id) {
    this.id = id;
  }

  /** A stable name, e.g. {@code inbox.committed-not-acked}. */
  public String id() {
    return id;
  }
}
