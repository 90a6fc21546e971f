package dev.postbox.runtime.api;

import java.util.List;
import java.util.Optional;

/** One subscription's dead letters: list, read, replay through its handler, or discard. */
public interface DeadLetterOperations {

  /** How many of the subscription's dead letters are open. */
  long openCount();

  /** Open dead letters, oldest first, at most {@code limit}. */
  List<DeadLetter> open(int limit);

  /** A dead letter of any subscription and status, by id. */
  Optional<DeadLetter> get(long id);

  /**
   * Runs the letter's event through the subscription's handler in one transaction that also records
   * the event as processed and settles the letter.
   *
   * @param force replay a CONFLICT letter's own payload although another payload was processed
   * @return whether the handler ran (false: the event had been processed since, and the letter is
   *     settled as a duplicate)
   * @throws NotReplayableException the letter is not open, or holds no whole event
   * @throws RuntimeException the handler failed again; the letter stays open
   */
  boolean replay(long id, boolean force);

  /** {@link #replay(long, boolean)} without force. */
  default boolean replay(long id) {
    return replay(id, false);
  }

  /** Gives up on an open letter; false if it was not open. */
  boolean discard(long id);

  /** Replays every open letter, or only those of one event type (null for all). */
  ReplayResult replayAll(String type);

  /** The open letters grouped by reason and error class, the largest group first. */
  List<DeadLetterGroup> openGroups();

  /**
   * Replays the open letters of one group, oldest first, each as {@link #replay(long)} does.
   * Letters that hold no whole event, CONFLICT letters and letters that need {@code force} are not
   * replayed (counted as failed, or left out when they hold no event); one whose handler fails
   * again stays open and is counted; the others go on.
   *
   * @param errorClass the group's error class, null for the group without one
   * @param throughId only letters up to this id (the group's {@link DeadLetterGroup#lastId()} as
   *     the operator saw it), or 0 for all
   */
  ReplayResult replayGroup(DeadLetterReason reason, String errorClass, long throughId);

  /**
   * Discards the open letters of one group in one statement.
   *
   * @return how many were discarded
   * @see #replayGroup(DeadLetterReason, String, long)
   */
  int discardGroup(DeadLetterReason reason, String errorClass, long throughId);
}
