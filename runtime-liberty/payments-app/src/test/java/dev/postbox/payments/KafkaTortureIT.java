package dev.postbox.payments;

/** The crash harness on Kafka. */
class KafkaTortureIT extends TortureContract {
  @Override
  String broker() {
    return "kafka";
  }

  @Override
  int firstKillPhase() {
    return 0;
  }
}
