package dev.postbox.payments;

/**
 * The crash harness on the embedded default, as a new user first runs it: the H2 file and the
 * Artemis broker inside the server, with server.xml's own database URL. Every SIGKILL kills the
 * broker and the database with the server; both restart from their files. Nothing is republished
 * (the harness cannot read the outbox while the server owns the file), so duplicates come from the
 * kills' windows alone.
 */
class EmbeddedTortureIT extends TortureContract {
  @Override
  String broker() {
    return "embedded";
  }

  @Override
  int firstKillPhase() {
    return 2;
  }

  @Override
  String database() {
    return "h2";
  }

  @Override
  int republishPercent() {
    return 0;
  }

  @Override
  boolean brokerRestart() {
    return false;
  }
}
