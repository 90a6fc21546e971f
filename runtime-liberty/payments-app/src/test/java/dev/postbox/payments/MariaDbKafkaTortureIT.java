package dev.postbox.payments;

/**
 * The crash harness on MariaDB and Kafka through the real Liberty path, with the server JVM in
 * UTC+14 (MariaDB's DATETIME has no zone: Postbox must write UTC whatever the JVM's zone). The
 * harness does not stop MariaDB; the PostgreSQL runs cover the database outage.
 */
class MariaDbKafkaTortureIT extends TortureContract {
  @Override
  String broker() {
    return "kafka";
  }

  @Override
  int firstKillPhase() {
    return 1;
  }

  @Override
  String database() {
    return "mariadb";
  }

  @Override
  String timeZone() {
    return "Pacific/Kiritimati";
  }
}
