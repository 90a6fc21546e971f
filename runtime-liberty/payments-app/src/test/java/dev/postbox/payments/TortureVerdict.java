package dev.postbox.payments;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The crash harness's judgement, apart from the harness so it can be tested on made-up states:
 * every accepted order exactly one charge and one notification, totals equal, nothing left
 * undispatched, no dead letters but the injected poison, and at least as many duplicates rejected
 * as were republished.
 */
record TortureVerdict(long lost, long doubled, List<String> problems) {

  boolean ok() {
    return problems.isEmpty();
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
