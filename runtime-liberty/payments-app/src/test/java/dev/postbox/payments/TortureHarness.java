package dev.postbox.payments;

import dev.postbox.runtime.crash.CrashPoints;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
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

/**
 * Effectively-once under crashes: drives the real payments app in its own Liberty process, on
 * PostgreSQL and a real Kafka broker, while SIGKILLing the server, restarting the broker, stopping
 * the database, and republishing a share of the events byte for byte; then checks every accepted
 * order for exactly one charge and one notification ({@link TortureVerdict}).
 */
final class TortureHarness {

  /**
   * The windows the kills aim at, in turn: a {@code POST /orders} committed and not yet answered, a
   * relay batch published and not yet marked dispatched, an inbox transaction committed and its
   * delivery not yet acknowledged. Each kill arms its crash point, waits until a thread of the
   * server is held there, and only then SIGKILLs the process.
   */
  static final List<String> KILL_PHASES =
      List.of(
          CrashPoints.HTTP_COMMITTED_NOT_ANSWERED,
          CrashPoints.RELAY_PUBLISHED_NOT_MARKED,
          CrashPoints.INBOX_COMMITTED_NOT_ACKED);

  /**
   * One run's shape.
   *
   * @param firstPhase the index in {@link #KILL_PHASES} the first kill aims at; the next kills take
   *     the following phases in turn
   * @param handlerFailures a transient failure injected this many times inside inbox transactions
   *     before they commit (the handler has run); 0 for none
   * @param unsafe {@code postbox.inbox.unsafe} for a negative control, or "none"
   * @param database postgresql, mariadb, or h2 (the embedded default, as shipped)
   * @param timeZone the server JVM's default time zone, or null for the machine's
   * @param overrides further server variables, e.g. a negative control's unsafe database URL
   */
  record Settings(
      String broker,
      int orders,
      int kills,
      int firstPhase,
      int clients,
      int republishPercent,
      int poison,
      boolean brokerRestart,
      Duration databasePause,
      int handlerFailures,
      String unsafe,
      String database,
      String timeZone,
      Map<String, String> overrides) {

    /** The usual run on PostgreSQL in the machine's time zone. */
    Settings(
        String broker,
        int orders,
        int kills,
        int firstPhase,
        int clients,
        int republishPercent,
        int poison,
        boolean brokerRestart,
        Duration databasePause,
        int handlerFailures,
        String unsafe) {
      this(
          broker,
          orders,
          kills,
          firstPhase,
          clients,
          republishPercent,
          poison,
          brokerRestart,
          databasePause,
          handlerFailures,
          unsafe,
          "postgresql",
          null,
          Map.of());
    }

    /** This run with another database, time zone and extra server variables. */
    Settings on(String database, String timeZone, Map<String, String> overrides) {
      return new Settings(
          broker,
          orders,
          kills,
          firstPhase,
          clients,
          republishPercent,
          poison,
          brokerRestart,
          databasePause,
          handlerFailures,
          unsafe,
          database,
          timeZone,
          overrides);
    }
  }

  /** What a run did and found. */
  record Result(
      Settings settings,
      long accepted,
      long clientRetries,
      long answeredFromIdempotencyKey,
      List<String> killsLanded,
      long republished,
      long duplicatesRejected,
      Duration duration,
      Duration drainAfterLastKill,
      List<String> chaos,
      TortureVerdict verdict) {

    String summary() {
      return String.join(
          "\n",
          "broker: "
              + settings.broker()
              + ", database: "
              + settings.database()
              + (settings.timeZone() == null ? "" : ", server time zone: " + settings.timeZone())
              + ", unsafe: "
              + settings.unsafe()
              + (settings.overrides().isEmpty() ? "" : ", overrides: " + settings.overrides()),
          "N (orders accepted): " + accepted + " of " + settings.orders(),
          "K (server SIGKILLs): "
              + settings.kills()
              + (killsLanded.isEmpty()
                  ? ""
                  : ", each once a server thread was held in its window: "
                      + String.join(", ", killsLanded)),
          "client retries with the same Idempotency-Key after errors or timeouts: " + clientRetries,
          "retries answered with the order the first attempt had placed (replayed): "
              + answeredFromIdempotencyKey,
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

  /** The embedded default's demo admin, set for the run (the server refuses default passwords). */
  static final String ADMIN_PASSWORD = "torture-admin-secret";

  private final Settings settings;
  private final Random random = new Random();
  private TortureDatabase db;

  /** Whether the harness reads the database itself (else through the running app's API). */
  private volatile boolean sqlReadable;

  private PaymentsApi api;
  private final String keyPrefix = "torture-" + Long.toHexString(System.nanoTime());
  private final Map<String, Long> accepted = new ConcurrentHashMap<>();
  private final AtomicLong republished = new AtomicLong();
  private final AtomicLong clientRetries = new AtomicLong();
  private final AtomicLong answeredFromKey = new AtomicLong();
  private final List<String> killsLanded = new ArrayList<>();
  private Path crashPoints;
  private final List<String> chaos = new ArrayList<>();
  private final AtomicBoolean stopRepublisher = new AtomicBoolean();

  TortureHarness(Settings settings) {
    this.settings = settings;
  }

  Result run() throws Exception {
    Instant started = Instant.now();
    try (TortureBroker broker = TortureBroker.of(settings.broker());
        TortureDatabase database =
            TortureDatabase.of(
                settings.database(), VariantServer.dirOf("torture-" + broker.label()))) {
      db = database;
      sqlReadable = database.readableWhileServing();
      if (!broker.embedded()) {
        broker.injectPoison(settings.poison());
      }
      VariantServer server =
          new VariantServer(broker.name(), "torture-" + broker.label(), serverVariables(broker));
      crashPoints = server.enableCrashPoints(settings.timeZone());
      server.start();
      if (broker.embedded()) {
        broker.injectPoison(settings.poison()); // the broker lives in the server
      }
      api = new PaymentsApi(server.url());
      Republisher republisher = new Republisher(broker);
      Thread republishing = new Thread(republisher, "torture-republisher");
      republishing.setDaemon(true);
      if (settings.republishPercent() > 0) {
        republishing.start();
      }
      boolean serverStopped = false;
      try {
        ExecutorService clients = Executors.newFixedThreadPool(settings.clients());
        AtomicInteger next = new AtomicInteger();
        for (int c = 0; c < settings.clients(); c++) {
          clients.execute(() -> placeOrders(api, next));
        }
        clients.shutdown();
        Instant lastKill = runChaos(server, broker, clients);
        if (!clients.awaitTermination(10, TimeUnit.MINUTES)) {
          throw new IllegalStateException("clients did not finish placing orders");
        }
        Duration drain = drain(republisher, broker.orders, lastKill);
        if (!chaos.isEmpty() && chaos.get(chaos.size() - 1).startsWith("did not drain")) {
          chaos.add(diagnose(server));
        }
        stopRepublisher.set(true);
        republishing.join(30_000);
        if (!db.readableWhileServing()) {
          server.close(); // the server's process owns the embedded database's file
          serverStopped = true;
          sqlReadable = true;
        }
        return new Result(
            settings,
            accepted.size(),
            clientRetries.get(),
            answeredFromKey.get(),
            List.copyOf(killsLanded),
            republished.get(),
            duplicatesRejected(broker),
            Duration.between(started, Instant.now()),
            drain,
            List.copyOf(chaos),
            verdict(broker));
      } finally {
        stopRepublisher.set(true);
        if (!serverStopped) {
          server.close();
        }
      }
    }
  }

  private Map<String, String> serverVariables(TortureBroker broker) {
    Map<String, String> v = new HashMap<>(broker.serverVariables());
    v.putAll(db.serverVariables());
    v.put("admin.password", ADMIN_PASSWORD);
    v.put("viewer.password", ADMIN_PASSWORD + "-viewer");
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
    // A request killed mid-transaction leaves its key claimed; its retry takes over after this.
    v.put("postbox.idempotency.in-flight-timeout", "5s");
    v.putAll(settings.overrides());
    return v;
  }

  /** Each client places orders with an idempotency key, retrying the same key until accepted. */
  private void placeOrders(PaymentsApi api, AtomicInteger next) {
    for (int i = next.getAndIncrement(); i < settings.orders(); i = next.getAndIncrement()) {
      long cents = 100 + (long) (Math.random() * 10_000);
      String body = "{\"customer\":\"torture-" + (i % 97) + "\",\"amountCents\":" + cents + "}";
      String key = keyPrefix + "-" + i;
      while (true) {
        try {
          HttpResponse<String> r = api.post("/orders", body, "Idempotency-Key", key);
          if (r.statusCode() == 200 || r.statusCode() == 201) {
            accepted.put(PaymentsApi.text(r.body(), "orderId"), cents);
            if (r.headers().firstValue("Idempotency-Replayed").isPresent()) {
              answeredFromKey.incrementAndGet(); // a retry found the order its first try placed
            }
            break;
          }
        } catch (RuntimeException serverDownOrTimedOut) {
          // the server was killed mid-request, or is restarting: retry with the same key
        }
        clientRetries.incrementAndGet();
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
  private Instant runChaos(VariantServer server, TortureBroker broker, ExecutorService clients)
      throws Exception {
    List<String> plan = new ArrayList<>();
    for (int k = 0; k < settings.kills(); k++) {
      plan.add("kill");
    }
    if (settings.brokerRestart()) {
      plan.add(Math.min(1, plan.size()), "broker");
    }
    if (!settings.databasePause().isZero() && db.canPause()) {
      plan.add(Math.min(2, plan.size()), "database");
    }
    if (settings.handlerFailures() > 0) {
      plan.add(Math.min(3, plan.size()), "failures");
    }
    int kills = 0;
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
          String phase = KILL_PHASES.get((settings.firstPhase() + kills++) % KILL_PHASES.size());
          String held = arm(phase + " park");
          server.kill();
          Files.deleteIfExists(crashPoints.resolve("armed")); // the restarted server runs free
          if (held != null) {
            killsLanded.add(phase);
            chaos.add("SIGKILL with " + held + " held, at " + state);
          } else {
            chaos.add("SIGKILL at " + state + ", " + phase + " not reached within a minute");
          }
          server.start();
          lastKill = Instant.now();
        }
        case "failures" -> {
          String at = arm(CrashPoints.INBOX_BEFORE_COMMIT + " fail " + settings.handlerFailures());
          chaos.add(
              settings.handlerFailures()
                  + " inbox transactions failed before commit, the first at "
                  + (at != null ? at : "(never reached)")
                  + ", at "
                  + state);
        }
        case "broker" -> {
          broker.restart();
          chaos.add("broker restart at " + state);
        }
        default -> {
          db.pause(settings.databasePause());
          chaos.add(
              db.kind() + " stopped " + settings.databasePause().toSeconds() + " s at " + state);
        }
      }
    }
    return lastKill;
  }

  /**
   * Arms a crash point in the running server and waits until a thread reaches it.
   *
   * @return the point and the thread that reached it, or null if none did within a minute
   */
  private String arm(String line) throws IOException {
    Path reached = crashPoints.resolve("reached");
    Files.deleteIfExists(reached);
    Files.writeString(crashPoints.resolve("armed"), line);
    try {
      org.awaitility.Awaitility.await()
          .atMost(Duration.ofMinutes(1))
          .pollInterval(Duration.ofMillis(20))
          .until(() -> Files.exists(reached));
      return Files.readString(reached);
    } catch (org.awaitility.core.ConditionTimeoutException notReached) {
      return null;
    }
  }

  /**
   * Waits until every accepted order is charged and notified and nothing is in flight; or, when
   * some never will be (a negative control loses them), until nothing is left to publish and the
   * counts have not moved for 30 seconds, far longer than the longest retry back-off (2 s).
   */
  private Duration drain(Republisher republisher, String orders, Instant lastKill) {
    AtomicLong firstSettled = new AtomicLong();
    AtomicLong lastCounts = new AtomicLong(-1);
    AtomicLong countsChangedAt = new AtomicLong(System.currentTimeMillis());
    AtomicBoolean stuck = new AtomicBoolean();
    // A backlog drains at the broker's pace: a full run on a slow stand-in gets longer.
    Duration patience = Duration.ofMinutes(5).plusMillis(20L * settings.orders());
    try {
      org.awaitility.Awaitility.await()
          .atMost(patience)
          .pollInterval(Duration.ofMillis(250))
          .until(
              () -> {
                long now = System.currentTimeMillis();
                long charges = quietly(this::chargeCount);
                long notifications = quietly(this::notificationCount);
                boolean nothingToPublish =
                    quietly(this::undispatched) == 0 && republisher.caughtUp(orders);
                if (lastCounts.getAndSet(charges * 1_000_003L + notifications)
                    != charges * 1_000_003L + notifications) {
                  countsChangedAt.set(now);
                }
                boolean settled =
                    charges >= accepted.size()
                        && notifications >= accepted.size()
                        && nothingToPublish;
                if (!settled) {
                  firstSettled.set(0);
                  stuck.set(nothingToPublish && now - countsChangedAt.get() >= 30_000);
                  return stuck.get();
                }
                firstSettled.compareAndSet(0, now);
                // settled, and still so three seconds on: nothing more is coming
                return now - firstSettled.get() >= 3_000;
              });
      if (stuck.get()) {
        chaos.add("stopped waiting: orders missing and nothing moved for 30 s");
        return Duration.between(lastKill, Instant.ofEpochMilli(countsChangedAt.get()));
      }
      return Duration.between(lastKill, Instant.ofEpochMilli(firstSettled.get()));
    } catch (org.awaitility.core.ConditionTimeoutException notDrained) {
      chaos.add("did not drain within " + patience.toSeconds() + " s");
      return Duration.between(lastKill, Instant.now()); // the verdict will say what is missing
    }
  }

  /**
   * What a failed drain left behind: the rows still to publish, the leases, the server's threads.
   */
  private String diagnose(VariantServer server) {
    StringBuilder d = new StringBuilder("left behind: ");
    try {
      if (!sqlReadable) {
        throw new SQLException("read after the server stops");
      }
      perOrder(
              "SELECT CONCAT(destination, ' ', status, ' attempts=', attempts, ' due=',"
                  + " next_attempt_at, ' error=', COALESCE(last_error, '-')), COUNT(*)"
                  + " FROM postbox_outbox WHERE status IN ('PENDING', 'FAILED')"
                  + " GROUP BY 1 ORDER BY 2 DESC")
          .forEach((row, count) -> d.append(count).append(" x ").append(row).append("; "));
      perOrder(
              "SELECT CONCAT(owner, ' until ', lease_until), COUNT(*) FROM postbox_lease"
                  + " GROUP BY 1")
          .forEach((lease, count) -> d.append(count).append(" leases ").append(lease).append("; "));
      d.append("now ").append(Instant.now()).append("; ");
    } catch (SQLException e) {
      d.append("(database: ").append(e.getMessage()).append(") ");
    }
    try {
      d.append("threads: ").append(server.threadDump());
    } catch (Exception e) {
      d.append("(no thread dump: ").append(e).append(')');
    }
    return d.toString();
  }

  private TortureVerdict verdict(TortureBroker broker) throws SQLException {
    return TortureVerdict.judge(
        Map.copyOf(accepted),
        perOrder("SELECT order_id, COUNT(*) FROM pay_ledger GROUP BY order_id"),
        perOrder("SELECT order_id, COUNT(*) FROM pay_notification GROUP BY order_id"),
        single("SELECT COALESCE(SUM(amount_cents), 0) FROM pay_ledger"),
        undispatched(),
        perOrder(
            "SELECT reason, COUNT(*) FROM postbox_dead_letter WHERE status = 'OPEN' GROUP BY reason"),
        settings.poison(),
        duplicatesRejected(broker),
        republished.get());
  }

  // ---- the independent republisher ----

  /**
   * Republishes a share of the events already published to the orders destination, byte for byte
   * with the same id, through an adapter of its own: the copies are the outbox rows' envelopes, so
   * the harness works the same on every broker.
   */
  private final class Republisher implements Runnable {
    private final TortureBroker broker;
    private volatile long lastId;

    Republisher(TortureBroker broker) {
      this.broker = broker;
    }

    @Override
    public void run() {
      Random dice = new Random();
      try (var out = dev.postbox.spi.Brokers.open(broker.name(), broker.republisherConfig())) {
        while (!stopRepublisher.get()) {
          List<dev.postbox.spi.Envelope> batch = new ArrayList<>();
          long last = lastId;
          try (Connection c = connect();
              PreparedStatement ps =
                  c.prepareStatement(
                      "SELECT id, event_id, event_key, event_type, source, subject, content_type,"
                          + " headers, payload, event_time FROM postbox_outbox"
                          + " WHERE destination = ? AND status = 'DISPATCHED' AND id > ?"
                          + " ORDER BY id")) {
            ps.setMaxRows(500);
            ps.setString(1, broker.orders);
            ps.setLong(2, last);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                last = rs.getLong("id");
                if (dice.nextInt(100) < settings.republishPercent()) {
                  batch.add(
                      dev.postbox.spi.Envelope.builder()
                          .id(rs.getString("event_id"))
                          .key(rs.getString("event_key"))
                          .type(rs.getString("event_type"))
                          .source(rs.getString("source"))
                          .subject(rs.getString("subject"))
                          .dataContentType(rs.getString("content_type"))
                          .headers(
                              dev.postbox.runtime.db.StringMapJson.read(rs.getString("headers")))
                          .payload(rs.getBytes("payload"))
                          .time(dev.postbox.runtime.db.Dialect.of(c).read(rs, "event_time"))
                          .build());
                }
              }
            }
          } catch (SQLException databaseDown) {
            pause(Duration.ofMillis(500));
            continue;
          }
          try {
            if (!batch.isEmpty()) {
              out.publisher().publishAll(broker.orders, batch);
              republished.addAndGet(batch.size());
            }
            lastId = last;
          } catch (RuntimeException brokerDown) {
            pause(Duration.ofMillis(500)); // retry the same rows
            continue;
          }
          if (batch.isEmpty() && last == lastId) {
            pause(Duration.ofMillis(200));
          }
        }
      } catch (RuntimeException e) {
        chaos.add("republisher stopped: " + e);
      }
    }

    /** Every dispatched event has had its chance to be copied. */
    boolean caughtUp(String orders) {
      if (settings.republishPercent() == 0) {
        return true;
      }
      try (Connection c = connect();
          PreparedStatement ps =
              c.prepareStatement(
                  "SELECT COALESCE(MAX(id), 0) FROM postbox_outbox"
                      + " WHERE destination = ? AND status = 'DISPATCHED'")) {
        ps.setString(1, orders);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          return lastId >= rs.getLong(1);
        }
      } catch (SQLException down) {
        return false;
      }
    }
  }

  // ---- the database ----

  // While the server runs, the embedded database is read through the app's own API.

  private long chargeCount() throws SQLException {
    return sqlReadable
        ? single("SELECT COUNT(*) FROM pay_ledger")
        : PaymentsApi.number(okBody(api.get("/ledger")), "charges");
  }

  private long notificationCount() throws SQLException {
    return sqlReadable
        ? single("SELECT COUNT(*) FROM pay_notification")
        : PaymentsApi.number(okBody(api.get("/ledger")), "notifications");
  }

  private long undispatched() throws SQLException {
    if (sqlReadable) {
      return single("SELECT COUNT(*) FROM postbox_outbox WHERE status IN ('PENDING', 'FAILED')");
    }
    String outbox = okBody(api.get("/admin/outbox", "admin:" + ADMIN_PASSWORD));
    return PaymentsApi.number(outbox, "pending") + PaymentsApi.number(outbox, "failed");
  }

  private static String okBody(HttpResponse<String> r) throws SQLException {
    if (r.statusCode() != 200) {
      throw new SQLException("the server answered " + r.statusCode()); // read as "down" here
    }
    return r.body();
  }

  private long duplicatesRejected(TortureBroker broker) throws SQLException {
    try (Connection c = connect();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT COALESCE(SUM(duplicates), 0) FROM postbox_inbox_counter"
                    + " WHERE subscription = ?")) {
      ps.setString(1, broker.orders + "/payments");
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
    return db.connect();
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

  /**
   * A retry back-off or a deliberate span of chaos (the clients', the republisher's, the outage's);
   * never a wait for a result an assertion depends on — those go through Awaitility above.
   */
  private static void pause(Duration d) {
    try {
      Thread.sleep(d.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
