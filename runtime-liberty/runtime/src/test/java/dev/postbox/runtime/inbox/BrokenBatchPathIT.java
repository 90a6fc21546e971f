package dev.postbox.runtime.inbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.broker.kafka.testing.KafkaTestBroker;
import dev.postbox.runtime.api.InboxListener;
import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Migrations;
import dev.postbox.runtime.db.Transactions;
import dev.postbox.runtime.testing.TestDatabase;
import dev.postbox.spi.Broker;
import dev.postbox.spi.Brokers;
import dev.postbox.spi.Consumer;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.Subscription;
import java.sql.PreparedStatement;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A JDBC setting that breaks the inbox's batch path (PostgreSQL's {@code reWriteBatchedInserts},
 * which hides per-row insert counts): nothing is lost or doubled, every batch runs one event per
 * transaction, and the operator is told so by a warning, not left with a silent slowdown.
 */
class BrokenBatchPathIT {

  @Test
  void aBatchPathBrokenByTheDriverIsWarnedAboutAndLosesNothing() {
    List<LogRecord> warnings = new CopyOnWriteArrayList<>();
    Handler capture =
        new Handler() {
          @Override
          public void publish(LogRecord record) {
            warnings.add(record);
          }

          @Override
          public void flush() {}

          @Override
          public void close() {}
        };
    Logger logger = Logger.getLogger(BatchFallbacks.class.getName());
    logger.addHandler(capture);
    KafkaTestBroker kafka = KafkaTestBroker.shared();
    try (TestDatabase db = TestDatabase.create(TestDatabase.Kind.POSTGRESQL);
        Broker broker =
            Brokers.open("kafka", Map.of("bootstrap.servers", kafka.bootstrapServers()))) {
      PGSimpleDataSource rewriting = new PGSimpleDataSource();
      rewriting.setURL(
          "jdbc:postgresql://127.0.0.1:5432/test?user=postgres&reWriteBatchedInserts=true"
              + "&currentSchema="
              + db.schemaName());
      Dialect dialect = Migrations.migrate(rewriting);
      Transactions tx = Transactions.jdbc(rewriting);
      db.execute("CREATE TABLE it_effect (event_id VARCHAR(256) NOT NULL)");

      String topic = "broken-batch-" + UUID.randomUUID();
      kafka.createTopic(topic, 1);
      List<Envelope> events = new ArrayList<>();
      for (int i = 0; i < 40; i++) {
        events.add(
            Envelope.builder()
                .source("urn:it")
                .type("OrderCaptured")
                .key("k" + i)
                .payload("x")
                .build());
      }
      broker.publisher().publishAll(topic, events);

      InboxProcessor inbox =
          new InboxProcessor(
              tx,
              dialect,
              InboxSettings.of("broken-batch"),
              (c, e) -> {
                try (PreparedStatement ps =
                    c.prepareStatement("INSERT INTO it_effect (event_id) VALUES (?)")) {
                  ps.setString(1, e.id());
                  ps.executeUpdate();
                }
              },
              Clock.systemUTC(),
              InboxListener.NONE,
              null);
      try (Consumer consumer = broker.subscribe(new Subscription(topic, "broken-batch", 5_000))) {
        await()
            .atMost(Duration.ofSeconds(60))
            .until(
                () -> {
                  inbox.process(consumer.poll(10, Duration.ofMillis(200)));
                  return db.count("SELECT COUNT(*) FROM it_effect") >= 40;
                });
      }
      assertThat(db.count("SELECT COUNT(DISTINCT event_id) FROM it_effect")).isEqualTo(40);
      assertThat(db.count("SELECT COUNT(*) FROM it_effect")).isEqualTo(40);
      assertThat(warnings)
          .extracting(LogRecord::getMessage)
          .anySatisfy(
              m ->
                  assertThat(m)
                      .contains("batches in a row failed as a whole")
                      .contains("per-row insert results"));
    } finally {
      logger.removeHandler(capture);
    }
  }
}
