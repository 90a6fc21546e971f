package dev.postbox.payments;

/**
 * The crash harness on SQS FIFO queues (ElasticMQ), two servers: message groups by key, so per-key
 * order is required. Nothing is republished by the harness: a FIFO queue drops a copy with a
 * deduplication id it saw in the last five minutes, so copies would never reach the inbox; the
 * kills and the pause still make redeliveries.
 */
class SqsFifoTortureIT extends TortureContract {
  @Override
  String broker() {
    return "sqs-fifo";
  }

  @Override
  int firstKillPhase() {
    return 1;
  }

  @Override
  int instances() {
    return 2;
  }

  @Override
  int republishPercent() {
    return 0;
  }
}
