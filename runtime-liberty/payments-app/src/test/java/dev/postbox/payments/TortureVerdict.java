package dev.postbox.payments;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The crash harness's judgement, apart from the harness so it can be tested on made-up states:
 * every accepted order exactly one charge and one notification, totals equal, nothing left
 * undispatched, no dead letters but the injected poison, and at least as many duplicates rejected
 * as were republished; and, per key, effects applied in the order their events were committed
 * ({@link #inOrder}).
 */
record TortureVerdict(
    long lost,
    long doubled,
    long outOfOrder,
    List<String> problems,
    List<String> notes,
    String holds) {

  TortureVerdict(long lost, long doubled, List<String> problems) {
    this(lost, doubled, 0, problems, List.of(), "-");
  }

  boolean ok() {
    return problems.isEmpty();
  }

  /** One applied effect: the order it belongs to and its number in its key's stream. */
  record Applied(String orderId, long seq) {}

  /**
   * Adds the per-key order of one stream of effects (the ledger's charges, or the notifications).
   *
   * <p>An effect is out of order when it was applied before an earlier event of its key had been
   * (reordered, or with a gap before it); two effects with one number were applied side by side,
   * and numbers must run 1, 2, 3 with none missing.
   *
   * @param committed per key, the orders in the order they were committed (each placed only after
   *     the previous one's 2xx, so this is the true order)
   * @param applied per key, the effects in the order of their numbers
   * @param required whether the broker promises per-key order (Kafka, Artemis groups, SQS FIFO);
   *     when not (SQS standard), disorder is noted, not a problem
   */
  TortureVerdict inOrder(
      String stream,
      Map<String, List<String>> committed,
      Map<String, List<Applied>> applied,
      boolean required) {
    long disordered = 0;
    long sideBySide = 0;
    long numberGaps = 0;
    String example = null;
    for (Map.Entry<String, List<Applied>> key : applied.entrySet()) {
      List<String> truth = committed.getOrDefault(key.getKey(), List.of());
      Map<String, Integer> position = new HashMap<>();
      for (int i = 0; i < truth.size(); i++) {
        position.put(truth.get(i), i);
      }
      Set<Integer> done = new HashSet<>();
      int prefix = 0; // every event before this position has been applied
      long expectedSeq = 1;
      for (Applied a : key.getValue()) {
        if (a.seq() < expectedSeq) {
          sideBySide++;
        } else if (a.seq() > expectedSeq) {
          numberGaps++;
        }
        expectedSeq = a.seq() + 1;
        Integer at = position.get(a.orderId());
        if (at == null || !done.add(at)) {
          continue; // an unknown order or a double: judged above
        }
        if (at > prefix) {
          disordered++;
          if (example == null) {
            example =
                "key "
                    + key.getKey()
                    + ": "
                    + a.orderId()
                    + " (placed "
                    + (at + 1)
                    + ") applied before "
                    + truth.get(prefix)
                    + " (placed "
                    + (prefix + 1)
                    + ")";
          }
        }
        while (done.contains(prefix)) {
          prefix++;
        }
      }
    }
    List<String> p = new ArrayList<>(problems);
    List<String> n = new ArrayList<>(notes);
    List<String> found = new ArrayList<>();
    if (disordered > 0) {
      found.add(
          stream
              + ": "
              + disordered
              + " effects applied before an earlier event of their key, e.g. "
              + example);
    }
    if (sideBySide > 0) {
      found.add(
          stream
              + ": "
              + sideBySide
              + " effects took a number already taken (applied side by side)");
    }
    if (numberGaps > 0) {
      found.add(stream + ": " + numberGaps + " gaps in a key's numbers");
    }
    (required ? p : n).addAll(found);
    if (!required && found.isEmpty()) {
      n.add(stream + ": in order per key, though this broker does not promise it");
    }
    return new TortureVerdict(
        lost, doubled, outOfOrder + disordered + sideBySide, List.copyOf(p), List.copyOf(n), holds);
  }

  /**
   * Adds the orders' holds (an {@code OrderHoldExpired} scheduled at placement, cancelled by the
   * charge): none still scheduled once drained, none left uncancelled behind a charge, no cancelled
   * one ever published (handled by the inbox, or an expiry recorded), and none published before it
   * was due.
   *
   * @param cancelled holds cancelled (their orders charged)
   * @param published holds published (their orders expired)
   * @param scheduledLeft holds still waiting for their due time
   * @param chargedNotCancelled charged orders whose hold is not CANCELLED
   * @param cancelledPublished cancelled holds that an inbox handled anyway
   * @param lateness per published hold, publish (settle) time minus due time
   */
  TortureVerdict holds(
      long cancelled,
      long published,
      long scheduledLeft,
      long chargedNotCancelled,
      long cancelledPublished,
      List<java.time.Duration> lateness) {
    return holds(
        cancelled,
        published,
        scheduledLeft,
        chargedNotCancelled,
        cancelledPublished,
        0,
        published,
        lateness);
  }

  /**
   * As above, and what an expiry could hide: an expired order whose {@code OrderCaptured} never
   * reached the inbox lost that event (the hold only stood in for it), and a published hold without
   * its expiry lost the hold's event; both count as lost.
   *
   * @param expiredUncaptured expired orders whose OrderCaptured the inbox never recorded
   * @param expiredOrders orders with an expiry
   */
  TortureVerdict holds(
      long cancelled,
      long published,
      long scheduledLeft,
      long chargedNotCancelled,
      long cancelledPublished,
      long expiredUncaptured,
      long expiredOrders,
      List<java.time.Duration> lateness) {
    List<String> p = new ArrayList<>(problems);
    // A published hold without its expiry leaves its order neither charged nor expired: judge
    // counted that order lost already.
    long lostHere = expiredUncaptured;
    if (expiredUncaptured > 0) {
      p.add(expiredUncaptured + " expired orders whose OrderCaptured never reached the inbox");
    }
    if (published > expiredOrders) {
      p.add((published - expiredOrders) + " published holds without an expiry");
    }
    if (scheduledLeft > 0) {
      p.add(scheduledLeft + " holds still scheduled after the drain");
    }
    if (chargedNotCancelled > 0) {
      p.add(chargedNotCancelled + " charged orders whose hold was not cancelled");
    }
    if (cancelledPublished > 0) {
      p.add(cancelledPublished + " cancelled holds published and handled anyway");
    }
    List<java.time.Duration> sorted = new ArrayList<>(lateness);
    sorted.sort(null);
    long early = sorted.stream().filter(java.time.Duration::isNegative).count();
    if (early > 0) {
      p.add(early + " holds published before they were due");
    }
    String line =
        "holds cancelled: "
            + cancelled
            + ", published (orders expired): "
            + published
            + ", published after cancel: "
            + cancelledPublished
            + (sorted.isEmpty() ? "" : ", lateness " + spread(sorted));
    return new TortureVerdict(lost + lostHere, doubled, outOfOrder, List.copyOf(p), notes, line);
  }

  /**
   * A hold's lateness without the time in {@code outages} (spans when no server ran, or the broker
   * or the database was down): what the relay itself added.
   */
  static java.time.Duration netOf(
      java.time.Instant due, java.time.Instant published, List<java.time.Instant[]> outages) {
    java.time.Duration late = java.time.Duration.between(due, published);
    if (late.isNegative()) {
      return late;
    }
    List<java.time.Instant[]> spans = new ArrayList<>();
    for (java.time.Instant[] o : outages) {
      java.time.Instant from = o[0].isAfter(due) ? o[0] : due;
      java.time.Instant to = o[1].isBefore(published) ? o[1] : published;
      if (from.isBefore(to)) {
        spans.add(new java.time.Instant[] {from, to});
      }
    }
    spans.sort(java.util.Comparator.comparing((java.time.Instant[] o) -> o[0]));
    java.time.Instant covered = due;
    for (java.time.Instant[] span : spans) {
      java.time.Instant from = span[0].isAfter(covered) ? span[0] : covered;
      if (span[1].isAfter(from)) {
        late = late.minus(java.time.Duration.between(from, span[1]));
        covered = span[1];
      }
    }
    return late;
  }

  /** p50, p99 and max of some durations, in ms; "-" for none. */
  static String spread(List<java.time.Duration> durations) {
    if (durations.isEmpty()) {
      return "-";
    }
    List<java.time.Duration> sorted = new ArrayList<>(durations);
    sorted.sort(null);
    return "p50 "
        + percentile(sorted, 50).toMillis()
        + " ms, p99 "
        + percentile(sorted, 99).toMillis()
        + " ms, max "
        + sorted.get(sorted.size() - 1).toMillis()
        + " ms";
  }

  static java.time.Duration percentile(List<java.time.Duration> sorted, int pct) {
    int i = (int) Math.ceil(pct / 100.0 * sorted.size()) - 1;
    return sorted.get(Math.max(0, Math.min(sorted.size() - 1, i)));
  }

  /**
   * @param accepted every order the API accepted (2xx), with its amount
   * @param charges charges per order id, from the ledger
   * @param notifications notifications per order id
   * @param openDeadLetters open dead letters by reason
   */
  static TortureVerdict judge(
      Map<String, Long> accepted,
      Map<String, Long> charges,
      Map<String, Long> notifications,
      long ledgerTotalCents,
      long undispatched,
      Map<String, Long> openDeadLetters,
      long poisonSent,
      long duplicatesRejected,
      long republished) {
    return judge(
        accepted,
        charges,
        notifications,
        Map.of(),
        ledgerTotalCents,
        undispatched,
        openDeadLetters,
        poisonSent,
        duplicatesRejected,
        republished);
  }

  /**
   * @param expiries expiries per order id: an order not charged within its hold expires instead,
   *     once, and is neither charged nor notified
   */
  static TortureVerdict judge(
      Map<String, Long> accepted,
      Map<String, Long> charges,
      Map<String, Long> notifications,
      Map<String, Long> expiries,
      long ledgerTotalCents,
      long undispatched,
      Map<String, Long> openDeadLetters,
      long poisonSent,
      long duplicatesRejected,
      long republished) {
    List<String> problems = new ArrayList<>();
    long lost = 0;
    long doubled = 0;
    long both = 0;
    long acceptedTotal = 0;
    for (Map.Entry<String, Long> order : accepted.entrySet()) {
      long c = charges.getOrDefault(order.getKey(), 0L);
      long n = notifications.getOrDefault(order.getKey(), 0L);
      long e = expiries.getOrDefault(order.getKey(), 0L);
      if (e > 0 && c == 0) {
        if (n > 0) {
          both++; // notified of a payment never charged
        }
      } else {
        acceptedTotal += order.getValue();
        if (c == 0 || n == 0) {
          lost++;
        }
      }
      if (c > 0 && e > 0) {
        both++;
      }
      if (c > 1 || n > 1 || e > 1) {
        doubled++;
      }
    }
    if (both > 0) {
      problems.add(both + " orders both charged (or notified) and expired");
    }
    for (String expired : expiries.keySet()) {
      if (!accepted.containsKey(expired)) {
        problems.add("an expiry for an order the API never accepted: " + expired);
      }
    }
    for (Map.Entry<String, Long> charged : charges.entrySet()) {
      if (!accepted.containsKey(charged.getKey())) {
        problems.add("a charge for an order the API never accepted: " + charged.getKey());
      }
    }
    if (lost > 0) {
      problems.add(lost + " accepted orders without their charge or notification");
    }
    if (doubled > 0) {
      problems.add(doubled + " orders charged, notified or expired more than once");
    }
    if (ledgerTotalCents != acceptedTotal) {
      problems.add(
          "ledger total "
              + ledgerTotalCents
              + " != the total of the accepted orders not expired "
              + acceptedTotal);
    }
    if (undispatched > 0) {
      problems.add(undispatched + " outbox rows not dispatched");
    }
    long poisonFound = openDeadLetters.getOrDefault("MALFORMED", 0L);
    if (poisonFound != poisonSent) {
      problems.add(poisonSent + " poison messages injected, " + poisonFound + " dead-lettered");
    }
    openDeadLetters.forEach(
        (reason, count) -> {
          if (!reason.equals("MALFORMED")) {
            problems.add(count + " unexpected dead letters: " + reason);
          }
        });
    if (duplicatesRejected < republished) {
      problems.add(
          "the inbox rejected "
              + duplicatesRejected
              + " duplicates; "
              + republished
              + " were republished");
    }
    return new TortureVerdict(lost, doubled, List.copyOf(problems));
  }
}
