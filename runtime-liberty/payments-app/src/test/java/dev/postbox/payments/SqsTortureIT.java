package dev.postbox.payments;

/** The crash harness on Sqs. */
class SqsTortureIT extends TortureContract {
  @Override
  String broker() {
    return "sqs";
  }
}
