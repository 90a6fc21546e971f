package dev.postbox.payments;

import org.junit.jupiter.api.Test;

/** The edge cases on the server the build starts: the embedded default (H2, Artemis inside). */
class EdgeCasesIT {

  @Test
  void inputTheEventCannotCarryIsRefusedWith400NamingTheField() {
    EdgeCases.check(new PaymentsApi());
  }
}
