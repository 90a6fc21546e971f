package dev.postbox.runtime.outbox;

import dev.postbox.runtime.api.OutboxRow;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The publish order of a claimed partition's rows: per key, due-then-id. A scheduled row that does
 * not hold its key ({@link OutboxRow#dueAt()} set) goes among its key's other due rows by its due
 * time: after those recorded before it fell due, before those recorded after. Every other row keeps
 * its id order (an event's due time is when it was recorded), and rows of different keys keep their
 * places in the batch. So when the relay is behind on a key (a backlog, a held key released, a
 * crash), its rows still go in the order they fell due.
 */
final class DueOrder {

  private DueOrder() {}

  /**
   * The rows (in id order) with each key's scheduled rows merged by due time among its others; the
   * slots a key's rows held in the batch keep holding that key's rows.
   */
  static List<OutboxRow> arrange(List<OutboxRow> rows) {
    if (!anyKeyedScheduled(rows)) {
      return rows; // the usual claim: nothing to place, nothing allocated
    }
    Map<String, List<OutboxRow>> plain = new HashMap<>();
    Map<String, List<OutboxRow>> scheduled = new LinkedHashMap<>();
    for (OutboxRow row : rows) {
      if (row.key() != null) {
        (row.dueAt() != null ? scheduled : plain)
            .computeIfAbsent(row.key(), k -> new ArrayList<>())
            .add(row);
      }
    }
    Map<String, Iterator<OutboxRow>> merged = new HashMap<>();
    scheduled.forEach(
        (key, due) -> merged.put(key, merge(plain.getOrDefault(key, List.of()), due).iterator()));
    List<OutboxRow> out = new ArrayList<>(rows.size());
    for (OutboxRow row : rows) {
      Iterator<OutboxRow> keyed = row.key() == null ? null : merged.get(row.key());
      out.add(keyed != null ? keyed.next() : row);
    }
    return out;
  }

  /** A key's plain rows (id order, kept) and its scheduled rows, merged by due time, then id. */
  private static List<OutboxRow> merge(List<OutboxRow> plain, List<OutboxRow> scheduled) {
    List<OutboxRow> due = new ArrayList<>(scheduled);
    due.sort(java.util.Comparator.comparing(OutboxRow::dueAt).thenComparingLong(OutboxRow::id));
    List<OutboxRow> out = new ArrayList<>(plain.size() + due.size());
    int i = 0;
    int j = 0;
    while (i < plain.size() || j < due.size()) {
      if (j == due.size()) {
        out.add(plain.get(i++));
      } else if (i == plain.size()) {
        out.add(due.get(j++));
      } else {
        OutboxRow p = plain.get(i);
        OutboxRow s = due.get(j);
        // A row recorded before the scheduled one was due before it too; one with a lower id that
        // was due later was an inKeyOrder row (its created_at became its due time), which the
        // later rows of its key never overtake.
        if (p.id() < s.id() || p.createdAt().isBefore(s.dueAt())) {
          out.add(plain.get(i++));
        } else {
          out.add(due.get(j++));
        }
      }
    }
    return out;
  }

  /**
   * A claim that filled its limit did not read the partition's later rows: a scheduled row goes
   * only if it fell due by {@code horizon}, when the first unread row that is not a scheduled one
   * was recorded (so no unread row of its key can have been due before it); otherwise it, and its
   * key's rows after it, wait for a later turn (the partition is full, so it goes again at once).
   *
   * @param rows arranged ({@link #arrange})
   * @param horizon when the first unread plain row was recorded; null when there is none
   * @param mayEmpty whether nothing may be left (a later turn reads more); if not, an emptied claim
   *     goes as it is, so a turn always makes progress
   */
  static List<OutboxRow> withoutOvertaken(List<OutboxRow> rows, Instant horizon, boolean mayEmpty) {
    if (horizon == null) {
      return rows;
    }
    Set<String> cut = new HashSet<>();
    List<OutboxRow> out = new ArrayList<>(rows.size());
    for (OutboxRow row : rows) {
      if (row.key() != null && cut.contains(row.key())) {
        continue;
      }
      if (row.dueAt() != null && row.key() != null && row.dueAt().isAfter(horizon)) {
        cut.add(row.key()); // a keyless event has no order to keep
        continue;
      }
      out.add(row);
    }
    return out.isEmpty() && !mayEmpty ? rows : out;
  }

  /** Whether any row is a keyed scheduled one (only those can be overtaken). */
  static boolean anyKeyedScheduled(List<OutboxRow> rows) {
    for (OutboxRow row : rows) {
      if (row.dueAt() != null && row.key() != null) {
        return true;
      }
    }
    return false;
  }
}
