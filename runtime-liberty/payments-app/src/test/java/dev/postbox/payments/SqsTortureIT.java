package dev.postbox.payments;

/** The crash harness on SQS (ElasticMQ). */
class SqsTortureIT extends TortureContract {
  @Override
  String broker() {
    return "sqs";
  }

  @Override
  int firstKillPhase() {
    return 2;
  }
}
