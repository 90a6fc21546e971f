package dev.postbox.runtime.api;

/** The dead letter does not exist, is settled already, or holds no whole event. */
public final class NotReplayableException extends IllegalStateException {
  private static final long serialVersionUID = 1L;

  public NotReplayableException(String message) {
    super(message);
  }
}
