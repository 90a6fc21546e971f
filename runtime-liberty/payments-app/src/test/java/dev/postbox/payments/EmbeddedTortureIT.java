package dev.postbox.payments;

import org.junit.jupiter.api.Test;

/**
 * The crash harness on the embedded default, as a new user first runs it: the H2 file and the
 * Artemis broker inside the server, with server.xml's own database URL. Every SIGKILL kills the
 * broker and the database with the server; both restart from their files. Nothing is republished
 * (the harness cannot read the outbox while the server owns the file), so duplicates come from the
 * kills' windows alone.
 */
class EmbeddedTortureIT {
  @Test
  void everyAcceptedOrderIsChargedAndNotifiedExactlyOnceThroughCrashes() throws Exception {
    // no broker restart of its own (the broker lives in the server), nothing republished
    new TortureRun("embedded", BrokerTortureIT.INBOX_WINDOW, "h2", null, 0, false, 1).prove();
  }
}
