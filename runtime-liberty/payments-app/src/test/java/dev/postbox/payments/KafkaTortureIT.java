package dev.postbox.payments;

/**
 * The crash harness on Kafka and PostgreSQL, with the server JVM in UTC+14: timestamps must not
 * depend on the JVM's time zone.
 */
class KafkaTortureIT extends TortureContract {
  @Override
  String broker() {
    return "kafka";
  }

  @Override
  int firstKillPhase() {
    return 0;
  }

  @Override
  String timeZone() {
    return "Pacific/Kiritimati";
  }

  @Override
  int instances() {
    return 2;
  }
}
