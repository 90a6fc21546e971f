package dev.postbox.payments;

/** The crash harness on Artemis. */
class ArtemisTortureIT extends TortureContract {
  @Override
  String broker() {
    return "artemis";
  }

  @Override
  int firstKillPhase() {
    return 1;
  }
}
