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
    long lost, long doubled, long outOfOrder, List<String> problems, List<String> notes) {

  TortureVerdict(long lost, long doubled, List<String> problems) {
    this(lost, doubled, 0, problems, List.of());
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
        lost, doubled, outOfOrder + disordered + sideBySide, List.copyOf(p), List.copyOf(n));
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
    List<String> problems = new ArrayList<>();
    long lost = 0;
    long doubled = 0;
    long acceptedTotal = 0;
    for (Map.Entry<String, Long> order : accepted.entrySet()) {
      acceptedTotal += order.getValue();
      long c = charges.getOrDefault(order.getKey(), 0L);
      long n = notifications.getOrDefault(order.getKey(), 0L);
      if (c == 0 || n == 0) {
        lost++;
      }
      if (c > 1 || n > 1) {
        doubled++;
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
      problems.add(doubled + " orders charged or notified more than once");
    }
    if (ledgerTotalCents != acceptedTotal) {
      problems.add(
          "ledger total " + ledgerTotalCents + " != accepted orders' total " + acceptedTotal);
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
