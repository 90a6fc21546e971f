package dev.postbox.payments;

import dev.postbox.broker.kafka.testing.KafkaTestBroker;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Effectively-once under crashes: drives the real payments app in its own Liberty process, on
 * PostgreSQL and a real Kafka broker, while SIGKILLing the server, restarting the broker, stopping
 * the database, and republishing a share of the events byte for byte; then checks every accepted
 * order for exactly one charge and one notification ({@link TortureVerdict}).
 */
final class TortureHarness {

  /**
   * One run's shape.
   *
   * @param unsafe {@code postbox.inbox.unsafe} for a negative control, or "none"
   */
  record Settings(
      int orders,
      int kills,
      int clients,
      int republishPercent,
      int poison,
      boolean brokerRestart,
      Duration databasePause,
      String unsafe) {}

  /** What a run did and found. */
  record Result(
      Settings settings,
      long accepted,
      long republished,
      long duplicatesRejected,
      Duration duration,
      Duration drainAfterLastKill,
      List<String> chaos,
      TortureVerdict verdict) {

    String summary() {
      return String.join(
          "\n",
          "broker: kafka, database: postgresql, unsafe: " + settings.unsafe(),
          "N (orders accepted): " + accepted + " of " + settings.orders(),
          "K (server SIGKILLs): " + settings.kills(),
          "duration: " + duration.toSeconds() + " s",
          "lost: " + verdict.lost() + ", doubled: " + verdict.doubled(),
          "republished byte for byte: " + republished,
          "duplicates rejected by the inbox: " + duplicatesRejected,
          "redeliveries and relay re-publishes rejected (the rest): "
              + Math.max(0, duplicatesRejected - republished),
          "time to drain after the last kill: " + drainAfterLastKill.toMillis() + " ms",
          "chaos: " + String.join("; ", chaos),
          "verdict: " + (verdict.ok() ? "OK" : "FAILED " + verdict.problems()));
    }
  }

  private static final String PG = "jdbc:postgresql://127.0.0.1:5432/test";
  private static final String SUBSCRIPTION = "orders/payments";

  private final Settings settings;
  private final Random random = new Random();
  private final String schema = "torture_" + Long.toHexString(System.nanoTime());
  private final Map<String, Long> accepted = new ConcurrentHashMap<>();
  private final AtomicLong republished = new AtomicLong();
  private final List<String> chaos = new ArrayList<>();
  private final AtomicBoolean stopRepublisher = new AtomicBoolean();

  TortureHarness(Settings settings) {
    this.settings = settings;
  }

  Result run() throws Exception {
    Instant started = Instant.now();
    execute("CREATE SCHEMA " + schema); // a name made here, never input
    try (KafkaTestBroker kafka = KafkaTestBroker.start()) {
      kafka.createTopic("orders", 8);
      kafka.createTopic("payments", 8);
      injectPoison(kafka);
      VariantServer server =
          new VariantServer("kafka", "torture-kafka", serverVariables(kafka.bootstrapServers()));
      server.start();
      PaymentsApi api = new PaymentsApi(server.url());
      Thread republisher = startRepublisher(kafka.bootstrapServers());
      Instant lastKill = Instant.now();
      try {
        ExecutorService clients = Executors.newFixedThreadPool(settings.clients());
        AtomicInteger next = new AtomicInteger();
        for (int c = 0; c < settings.clients(); c++) {
          clients.execute(() -> placeOrders(api, next));
        }
        clients.shutdown();
        lastKill = runChaos(server, kafka, clients);
        if (!clients.awaitTermination(10, TimeUnit.MINUTES)) {
          throw new IllegalStateException("clients did not finish placing orders");
        }
        Duration drain = drain(kafka.bootstrapServers(), lastKill);
        stopRepublisher.set(true);
        republisher.join(30_000);
        return new Result(
            settings,
            accepted.size(),
            republished.get(),
            duplicatesRejected(),
            Duration.between(started, Instant.now()),
            drain,
            List.copyOf(chaos),
            verdict());
      } finally {
        stopRepublisher.set(true);
        server.close();
      }
    } finally {
      execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    }
  }

  private Map<String, String> serverVariables(String bootstrap) {
    Map<String, String> v = new HashMap<>();
    v.put("db.url", PG + "?currentSchema=" + schema);
    v.put("db.driver", "org.postgresql.Driver");
    v.put("db.user", "postgres");
    v.put("payments.embedded-artemis", "false");
    v.put("postbox.broker", "kafka");
    v.put("postbox.broker.bootstrap.servers", bootstrap);
    // A killed server's consumers leave the group after this, not Kafka's default 45 s.
    v.put("postbox.broker.kafka.consumer.session.timeout.ms", "6000");
    v.put("postbox.partitions", "16");
    v.put("postbox.lease", "5s");
    v.put("postbox.poll-interval", "200ms");
    // Outages are transient here: retry quickly and long, never park a row or dead-letter.
    v.put("postbox.retry.max-attempts", "1000");
    v.put("postbox.retry.initial-delay", "100ms");
    v.put("postbox.retry.max-delay", "2s");
    v.put("postbox.inbox.max-attempts", "1000");
    v.put("postbox.inbox.initial-delay", "100ms");
    v.put("postbox.inbox.max-delay", "2s");
    v.put("postbox.inbox.unsafe", settings.unsafe());
    return v;
  }

  /** Each client places orders with an idempotency key, retrying the same key until accepted. */
  private void placeOrders(PaymentsApi api, AtomicInteger next) {
    for (int i = next.getAndIncrement(); i < settings.orders(); i = next.getAndIncrement()) {
      long cents = 100 + (long) (Math.random() * 10_000);
      String body = "{\"customer\":\"torture-" + (i % 97) + "\",\"amountCents\":" + cents + "}";
      String key = schema + "-" + i;
      while (true) {
        try {
          HttpResponse<String> r = api.post("/orders", body, "Idempotency-Key", key);
          if (r.statusCode() == 200 || r.statusCode() == 201) {
            accepted.put(PaymentsApi.text(r.body(), "orderId"), cents);
            break;
          }
        } catch (RuntimeException serverDownOrTimedOut) {
          // the server was killed mid-request, or is restarting: retry with the same key
        }
        pause(Duration.ofMillis(200));
      }
    }
  }

  /**
   * The kills, the broker restart and the database pause, one after another, each once the clients
   * have placed a further share of the orders, so each lands while orders, the relay and the inbox
   * are all busy.
   *
   * @return when the last kill's server was back
   */
  private Instant runChaos(VariantServer server, KafkaTestBroker kafka, ExecutorService clients)
      throws Exception {
    List<String> plan = new ArrayList<>();
    for (int k = 0; k < settings.kills(); k++) {
      plan.add("kill");
    }
    if (settings.brokerRestart()) {
      plan.add(Math.min(1, plan.size()), "broker");
    }
    if (!settings.databasePause().isZero()) {
      plan.add(Math.min(2, plan.size()), "database");
    }
    Instant lastKill = Instant.now();
    for (int step = 0; step < plan.size(); step++) {
      long due = (long) settings.orders() * (step + 1) / (plan.size() + 1);
      org.awaitility.Awaitility.await()
          .atMost(Duration.ofMinutes(10))
          .pollInterval(Duration.ofMillis(20))
          .until(() -> accepted.size() >= due || clients.isTerminated());
      pause(Duration.ofMillis(random.nextInt(300))); // a random moment within the busy stretch
      String state =
          "accepted="
              + accepted.size()
              + " outboxPending="
              + quietly(this::undispatched)
              + " uncharged="
              + quietly(() -> accepted.size() - chargeCount());
      switch (plan.get(step)) {
        case "kill" -> {
          server.kill();
          chaos.add("SIGKILL at " + state);
          server.start();
          lastKill = Instant.now();
        }
        case "broker" -> {
          kafka.restart();
          chaos.add("broker restart at " + state);
        }
        default -> {
          pauseDatabase(settings.databasePause());
          chaos.add(
              "PostgreSQL stopped " + settings.databasePause().toSeconds() + " s at " + state);
        }
      }
    }
    return lastKill;
  }

  /** Waits until every accepted order is charged and notified and nothing is in flight. */
  private Duration drain(String bootstrap, Instant lastKill) {
    AtomicLong firstSettled = new AtomicLong();
    try {
      org.awaitility.Awaitility.await()
          .atMost(Duration.ofMinutes(5))
          .pollInterval(Duration.ofMillis(250))
          .until(
              () -> {
                boolean settled =
                    quietly(this::chargeCount) >= accepted.size()
                        && quietly(this::notificationCount) >= accepted.size()
                        && quietly(this::undispatched) == 0
                        && republisherCaughtUp(bootstrap);
                if (!settled) {
                  firstSettled.set(0);
                  return false;
                }
                firstSettled.compareAndSet(0, System.currentTimeMillis());
                // settled, and still so three seconds on: nothing more is coming
                return System.currentTimeMillis() - firstSettled.get() >= 3_000;
              });
      return Duration.between(lastKill, Instant.ofEpochMilli(firstSettled.get()));
    } catch (org.awaitility.core.ConditionTimeoutException notDrained) {
      chaos.add("did not drain within 5 minutes");
      return Duration.between(lastKill, Instant.now()); // the verdict will say what is missing
    }
  }

  private TortureVerdict verdict() throws SQLException {
    return TortureVerdict.judge(
        Map.copyOf(accepted),
        perOrder("SELECT order_id, COUNT(*) FROM pay_ledger GROUP BY order_id"),
        perOrder("SELECT order_id, COUNT(*) FROM pay_notification GROUP BY order_id"),
        single("SELECT COALESCE(SUM(amount_cents), 0) FROM pay_ledger"),
        undispatched(),
        perOrder(
            "SELECT reason, COUNT(*) FROM postbox_dead_letter WHERE status = 'OPEN' GROUP BY reason"),
        settings.poison(),
        duplicatesRejected(),
        republished.get());
  }

  // ---- the independent republisher ----

  private Thread startRepublisher(String bootstrap) {
    Thread t =
        new Thread(
            () -> {
              Map<String, Object> consumerProps =
                  Map.of(
                      ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                      bootstrap,
                      ConsumerConfig.GROUP_ID_CONFIG,
                      "torture-republisher-" + schema,
                      ConsumerConfig.AUTO_OFFSET_RESET_CONFIG,
                      "earliest",
                      ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG,
                      ByteArrayDeserializer.class,
                      ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG,
                      ByteArrayDeserializer.class);
              Map<String, Object> producerProps =
                  Map.of(
                      ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                      ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class,
                      ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
              Random dice = new Random();
              java.util.Set<String> seen = new java.util.HashSet<>();
              try (KafkaConsumer<byte[], byte[]> in = new KafkaConsumer<>(consumerProps);
                  KafkaProducer<byte[], byte[]> out = new KafkaProducer<>(producerProps)) {
                in.subscribe(List.of("orders"));
                while (!stopRepublisher.get()) {
                  for (ConsumerRecord<byte[], byte[]> r : in.poll(Duration.ofMillis(200))) {
                    // Decide once per event id: its copies (ours, or the relay's after a crash)
                    // come back through this topic and must not be copied again.
                    var id = r.headers().lastHeader("ce_id");
                    boolean firstSight =
                        id != null && seen.add(new String(id.value(), StandardCharsets.UTF_8));
                    if (firstSight && dice.nextInt(100) < settings.republishPercent()) {
                      ProducerRecord<byte[], byte[]> copy =
                          new ProducerRecord<>("orders", r.partition(), r.key(), r.value());
                      r.headers().forEach(h -> copy.headers().add(h)); // byte for byte
                      out.send(copy).get();
                      republished.incrementAndGet();
                    }
                  }
                  in.commitSync();
                }
              } catch (Exception e) {
                chaos.add("republisher stopped: " + e);
              }
            },
            "torture-republisher");
    t.setDaemon(true);
    t.start();
    return t;
  }

  /** The republisher has read everything, so every copy it will make is made. */
  private boolean republisherCaughtUp(String bootstrap) {
    Map<String, Object> props =
        Map.of(
            ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
            bootstrap,
            ConsumerConfig.GROUP_ID_CONFIG,
            "torture-republisher-" + schema,
            ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG,
            ByteArrayDeserializer.class,
            ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG,
            ByteArrayDeserializer.class);
    try (KafkaConsumer<byte[], byte[]> probe = new KafkaConsumer<>(props)) {
      List<TopicPartition> partitions = new ArrayList<>();
      probe
          .partitionsFor("orders")
          .forEach(p -> partitions.add(new TopicPartition("orders", p.partition())));
      Map<TopicPartition, Long> ends = probe.endOffsets(partitions);
      var committed = probe.committed(new java.util.HashSet<>(partitions));
      for (TopicPartition tp : partitions) {
        var c = committed.get(tp);
        if (c == null || c.offset() < ends.get(tp)) {
          return false;
        }
      }
      return true;
    } catch (RuntimeException brokerBusy) {
      return false;
    }
  }

  private void injectPoison(KafkaTestBroker kafka) throws Exception {
    try (KafkaProducer<byte[], byte[]> raw =
        new KafkaProducer<>(
            Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers(),
                ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class,
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class))) {
      for (int i = 0; i < settings.poison(); i++) {
        raw.send(new ProducerRecord<>("orders", ("poison " + i).getBytes(StandardCharsets.UTF_8)))
            .get();
      }
    }
  }

  // ---- the database ----

  private static void pauseDatabase(Duration outage) throws Exception {
    String version;
    try (var versions = java.nio.file.Files.list(java.nio.file.Path.of("/etc/postgresql"))) {
      version = versions.findFirst().orElseThrow().getFileName().toString();
    }
    exec("pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "stop", "-m", "fast");
    pause(outage); // the outage itself: a fixed span by design, not a wait for async work
    exec("pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "start");
  }

  private static void exec(String... command) throws Exception {
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new IllegalStateException(String.join(" ", command) + " failed: " + out);
    }
  }

  private long chargeCount() throws SQLException {
    return single("SELECT COUNT(*) FROM pay_ledger");
  }

  private long notificationCount() throws SQLException {
    return single("SELECT COUNT(*) FROM pay_notification");
  }

  private long undispatched() throws SQLException {
    return single("SELECT COUNT(*) FROM postbox_outbox WHERE status IN ('PENDING', 'FAILED')");
  }

  private long duplicatesRejected() throws SQLException {
    try (Connection c = connect();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT COALESCE(SUM(duplicates), 0) FROM postbox_inbox_counter"
                    + " WHERE subscription = ?")) {
      ps.setString(1, SUBSCRIPTION);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  private long single(String sql) throws SQLException {
    try (Connection c = connect();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private Map<String, Long> perOrder(String sql) throws SQLException {
    Map<String, Long> out = new HashMap<>();
    try (Connection c = connect();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      while (rs.next()) {
        out.put(rs.getString(1), rs.getLong(2));
      }
    }
    return out;
  }

  private Connection connect() throws SQLException {
    Connection c = DriverManager.getConnection(PG + "?currentSchema=" + schema, "postgres", "");
    return c;
  }

  private void execute(String sql) throws SQLException {
    try (Connection c = DriverManager.getConnection(PG, "postgres", "");
        Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  /** A reading that tolerates the database being down at that moment (-1). */
  private static long quietly(SqlReading reading) {
    try {
      return reading.read();
    } catch (SQLException | RuntimeException down) {
      return -1;
    }
  }

  @FunctionalInterface
  private interface SqlReading {
    long read() throws SQLException;
  }

  private static void pause(Duration d) {
    try {
      Thread.sleep(d.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
