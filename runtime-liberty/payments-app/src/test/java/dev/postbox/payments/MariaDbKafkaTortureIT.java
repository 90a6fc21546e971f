package dev.postbox.payments;

import org.junit.jupiter.api.Test;

/**
 * The crash harness on MariaDB and Kafka through the real Liberty path, with the server JVM in
 * UTC+14 (MariaDB's DATETIME has no zone: Postbox must write UTC whatever the JVM's zone). The
 * harness does not stop MariaDB; the PostgreSQL runs cover the database outage.
 */
class MariaDbKafkaTortureIT {
  @Test
  void everyAcceptedOrderIsChargedAndNotifiedExactlyOnceThroughCrashes() throws Exception {
    new TortureRun(
            "kafka",
            BrokerTortureIT.RELAY_WINDOW,
            "mariadb",
            BrokerTortureIT.UTC_PLUS_14,
            20,
            true,
            1)
        .prove();
  }
}
