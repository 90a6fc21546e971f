package dev.postbox.payments;

/** The crash harness on Kafka. */
class KafkaTortureIT extends TortureContract {
  @Override
  String broker() {
    return "kafka";
  }
}
