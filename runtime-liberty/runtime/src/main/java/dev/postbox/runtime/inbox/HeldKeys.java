package dev.postbox.runtime.inbox;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.Map;
import java.util.Set;

/**
 * Which keys of a batch are held, and by what: the one place that answers it, from the database. A
 * key is held by its queued events ({@code postbox_inbox_pending}: an earlier event failed and
 * waits there for its retry, or followers wait behind it) or, in sequenced mode, by an open dead
 * letter. Nothing about a held key is remembered in memory, so a crash, a restart, a rebalance or a
 * consumer replaced after an outage finds the same answer.
 *
 * @param byQueue keys with queued events: their new events queue behind them
 * @param byLetter sequenced mode: keys with an open letter, each with its oldest such letter's id;
 *     their new events are parked behind it
 */
record HeldKeys(Set<String> byQueue, Map<String, Long> byLetter) {

  static final HeldKeys NONE = new HeldKeys(Set.of(), Map.of());

  /**
   * One query for the batch's keys (two in sequenced mode), in the batch's transaction. A key held
   * by a letter is not looked up in the queue: its events are parked, not queued.
   */
  static HeldKeys lookup(
      Connection c,
      String subscription,
      boolean sequenced,
      LetterHoldRepository letters,
      Set<String> keys)
      throws SQLException {
    if (keys.isEmpty()) {
      return NONE;
    }
    Map<String, Long> byLetter =
        sequenced ? letters.openLetterKeys(c, subscription, keys) : Map.of();
    Set<String> rest = keys;
    if (!byLetter.isEmpty()) {
      rest = new java.util.HashSet<>(keys);
      rest.removeAll(byLetter.keySet());
    }
    return new HeldKeys(PendingEventRepository.queued(c, subscription, rest), byLetter);
  }
}
