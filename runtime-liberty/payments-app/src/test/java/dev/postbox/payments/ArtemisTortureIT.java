package dev.postbox.payments;

/** The crash harness on Artemis, two servers sharing the broker and PostgreSQL. */
class ArtemisTortureIT extends TortureContract {
  @Override
  String broker() {
    return "artemis";
  }

  @Override
  int firstKillPhase() {
    return 1;
  }

  @Override
  int instances() {
    return 2;
  }
}
