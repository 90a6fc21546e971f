package dev.postbox.payments;

import dev.postbox.payments.crash.CrashPoints;
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
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
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
   * @param negativeControl a {@link dev.postbox.payments.crash.NegativeControlBroker} mode that
   *     breaks the broker's deliveries on purpose (ack-on-poll, fresh-ids, no-keys), or "none"
   * @param database postgresql, mariadb, or h2 (the embedded default, as shipped)
   * @param timeZone the server JVM's default time zone, or null for the machine's
   * @param overrides further server variables, e.g. a negative control's unsafe database URL
   * @param instances how many servers share the database and the broker, clients spread across
   *     them; kills aim at one at a time while the others keep working
   * @param pause whether one lease holder is paused (SIGSTOP) inside a relay batch for longer than
   *     the lease, then resumed, to prove it marks nothing once another instance took over
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
      String negativeControl,
      String database,
      String timeZone,
      Map<String, String> overrides,
      int instances,
      boolean pause) {

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
        String negativeControl) {
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
          negativeControl,
          "postgresql",
          null,
          Map.of(),
          1,
          false);
    }

    /** This run with another database, time zone and extra server variables. */
    Settings on(String database, String timeZone, Map<String, String> overrides) {
      return with(database, timeZone, overrides, instances, pause);
    }

    /** This run on several servers, with or without a pause. */
    Settings across(int instances, boolean pause) {
      return with(database, timeZone, overrides, instances, pause);
    }

    private Settings with(
        String database,
        String timeZone,
        Map<String, String> overrides,
        int instances,
        boolean pause) {
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
          negativeControl,
          database,
          timeZone,
          overrides,
          instances,
          pause);
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
      List<Resume> resumes,
      String fencing,
      TortureVerdict verdict,
      String lateNet) {

    String summary() {
      return String.join(
          "\n",
          "broker: "
              + settings.broker()
              + ", database: "
              + settings.database()
              + (settings.timeZone() == null ? "" : ", server time zone: " + settings.timeZone())
              + ", negative control: "
              + settings.negativeControl()
              + (settings.overrides().isEmpty() ? "" : ", overrides: " + settings.overrides())
              + ", instances: "
              + settings.instances(),
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
          "lost: "
              + verdict.lost()
              + ", doubled: "
              + verdict.doubled()
              + ", out-of-order: "
              + verdict.outOfOrder(),
          "per-key order: "
              + (verdict.notes().isEmpty() ? "required" : String.join("; ", verdict.notes())),
          "scheduled holds (" + HOLD + "): " + verdict.holds(),
          "hold lateness net of outages (no server up, broker or database down): " + lateNet,
          "republished byte for byte: " + republished,
          "duplicates rejected by the inbox: " + duplicatesRejected,
          "redeliveries and relay re-publishes rejected (the rest): "
              + Math.max(0, duplicatesRejected - republished),
          "time to drain after the last kill: " + drainAfterLastKill.toMillis() + " ms",
          "time to resume after each restart (ready -> the first event of the stuck orders"
              + " handled -> all of them charged or expired): "
              + (resumes.isEmpty()
                  ? "-"
                  : String.join("; ", resumes.stream().map(Resume::toString).toList())),
          "pause: " + (fencing == null ? "-" : fencing),
          "chaos: " + String.join("; ", chaos),
          "verdict: " + (verdict.ok() ? "OK" : "FAILED " + verdict.problems()));
    }
  }

  /**
   * How one restarted server resumed: of the orders accepted before the kill and still unsettled
   * when it was ready again (the ones its death held up), when the inbox first handled one of their
   * events and when the last of them was settled.
   *
   * @param waiting how many were waiting at ready; 0 when none were
   * @param first from ready to the first of their events handled, or null if none was
   * @param all from ready to the last of them charged or expired, or null if not all were
   */
  record Resume(String server, int waiting, Duration first, Duration all) {
    @Override
    public String toString() {
      return server
          + ": "
          + (waiting == 0
              ? "nothing was waiting"
              : waiting
                  + " waiting, first after "
                  + (first == null ? "never" : first.toMillis() + " ms")
                  + ", all after "
                  + (all == null ? "never" : all.toMillis() + " ms"));
    }
  }

  /** The embedded default's demo admin, set for the run (the server refuses default passwords). */
  static final String ADMIN_PASSWORD = "torture-admin-secret";

  private final Settings settings;
  private final Random random = new Random();
  private TortureDatabase db;

  /** Whether the harness reads the database itself (else through the running app's API). */
  private volatile boolean sqlReadable;

  /** The first server's API, for reading the embedded database while it serves. */
  private PaymentsApi api;

  private final List<VariantServer> servers = new ArrayList<>();
  private final List<PaymentsApi> apis = new ArrayList<>();

  /** Per server, where its crash points are armed. */
  private final List<Path> crashPoints = new ArrayList<>();

  /** Per customer (the events' key), the orders in the order they were accepted. */
  private final Map<String, List<String>> committed = new ConcurrentHashMap<>();

  private final List<Resume> resumes = new ArrayList<>();

  /** The last kill's restart, when it runs beside the drain (several servers); null otherwise. */
  private volatile java.util.concurrent.CompletableFuture<Void> restarting;

  private volatile String fencing;
  private final String keyPrefix = "torture-" + Long.toHexString(System.nanoTime());
  private final Map<String, Long> accepted = new ConcurrentHashMap<>();
  private final AtomicLong republished = new AtomicLong();
  private final AtomicLong clientRetries = new AtomicLong();
  private final AtomicLong answeredFromKey = new AtomicLong();
  private final List<String> killsLanded = new ArrayList<>();
  private final List<String> chaos = new ArrayList<>();
  private final AtomicBoolean stopRepublisher = new AtomicBoolean();

  TortureHarness(Settings settings) {
    this.settings = settings;
  }

  Result run() throws Exception {
    Instant started = Instant.now();
    if (settings.instances() > 1 && !settings.database().equals("postgresql")) {
      throw new IllegalArgumentException("several instances share a PostgreSQL database only");
    }
    try (TortureBroker broker = TortureBroker.of(settings.broker(), settings.brokerRestart());
        TortureDatabase database =
            TortureDatabase.of(
                settings.database(), VariantServer.dirOf("torture-" + broker.label()))) {
      db = database;
      sqlReadable = database.readableWhileServing();
      if (!broker.embedded()) {
        broker.injectPoison(settings.poison());
      }
      for (int i = 0; i < settings.instances(); i++) {
        VariantServer server =
            new VariantServer(
                broker.name(),
                "torture-" + broker.label() + (i == 0 ? "" : "-" + (i + 1)),
                serverVariables(broker));
        crashPoints.add(server.enableCrashPoints(settings.timeZone()));
        servers.add(server);
      }
      startTogether(servers);
      for (VariantServer server : servers) {
        apis.add(new PaymentsApi(server.url()));
      }
      api = apis.get(0);
      if (broker.embedded()) {
        broker.injectPoison(settings.poison()); // the broker lives in the server
      }
      Republisher republisher = new Republisher(broker);
      Thread republishing = new Thread(republisher, "torture-republisher");
      republishing.setDaemon(true);
      if (settings.republishPercent() > 0) {
        republishing.start();
      }
      boolean serversStopped = false;
      Throwable outcome = null; // the run's own failure: a failed stop never replaces it
      try {
        ExecutorService clients = Executors.newFixedThreadPool(settings.clients());
        AtomicInteger next = new AtomicInteger();
        clientsStarted = System.nanoTime();
        for (int c = 0; c < settings.clients(); c++) {
          int client = c;
          clients.execute(() -> placeOrders(client, next));
        }
        clients.shutdown();
        Instant lastKill = runChaos(broker, clients);
        if (!clients.awaitTermination(10, TimeUnit.MINUTES)) {
          throw new IllegalStateException("clients did not finish placing orders");
        }
        Duration drain = drain(republisher, broker.orders, lastKill);
        if (restarting != null) {
          restarting.get(5, TimeUnit.MINUTES); // the restarted server is up before the verdict
        }
        String ended = chaos.isEmpty() ? "" : chaos.get(chaos.size() - 1);
        if (ended.startsWith("did not drain") || ended.startsWith("stopped waiting")) {
          chaos.add(diagnose());
        }
        stopRepublisher.set(true);
        republishing.join(30_000);
        if (!db.readableWhileServing()) {
          servers.forEach(VariantServer::close); // the server owns the embedded database's file
          serversStopped = true;
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
            List.copyOf(resumes),
            fencing,
            verdict(broker),
            lateNet);
      } catch (Exception | Error e) {
        outcome = e;
        throw e;
      } finally {
        stopRepublisher.set(true);
        if (!serversStopped) {
          try {
            stopAll(servers);
          } catch (RuntimeException stopFailed) {
            if (outcome == null) {
              throw stopFailed;
            }
            outcome.addSuppressed(stopFailed);
          }
        }
      }
    }
  }

  /**
   * Stops the servers side by side (the verdict is in; nothing here is measured), waits for every
   * stop, and rethrows the first failure with the others suppressed.
   */
  private static void stopAll(List<VariantServer> servers) {
    List<Thread> stopping = new ArrayList<>();
    List<RuntimeException> failures = java.util.Collections.synchronizedList(new ArrayList<>());
    for (VariantServer server : servers) {
      Thread t =
          new Thread(
              () -> {
                try {
                  server.resume(); // in case a failure left it paused
                } catch (RuntimeException alreadyGone) {
                  // stopped or killed
                }
                try {
                  server.close();
                } catch (RuntimeException e) {
                  failures.add(e);
                }
              },
              "stop-" + server);
      t.start();
      stopping.add(t);
    }
    boolean interrupted = false;
    for (Thread t : stopping) {
      while (t.isAlive()) {
        try {
          t.join();
        } catch (InterruptedException e) {
          interrupted = true; // every stop is still waited for
        }
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    if (!failures.isEmpty()) {
      RuntimeException first = failures.get(0);
      failures.subList(1, failures.size()).forEach(first::addSuppressed);
      throw first;
    }
  }

  /**
   * Starts the servers at the same time, as instances of one service start in a rollout (their
   * migrations and lease claims race, as they would there), and waits until each is ready.
   */
  private static void startTogether(List<VariantServer> servers) throws Exception {
    if (servers.size() == 1) {
      servers.get(0).start();
      return;
    }
    java.util.concurrent.ExecutorService starting =
        java.util.concurrent.Executors.newFixedThreadPool(servers.size());
    try {
      List<java.util.concurrent.Future<?>> started = new ArrayList<>();
      for (VariantServer server : servers) {
        started.add(starting.submit(server::start));
      }
      for (java.util.concurrent.Future<?> f : started) {
        try {
          f.get();
        } catch (java.util.concurrent.ExecutionException e) {
          throw e.getCause() instanceof Exception cause ? cause : e;
        }
      }
    } finally {
      starting.shutdownNow();
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
    if (!settings.negativeControl().equals("none")) {
      // The real adapter behind a test-only wrapper that breaks its deliveries on purpose.
      v.put("postbox.broker.negative-control.delegate", v.get("postbox.broker"));
      v.put("postbox.broker.negative-control.mode", settings.negativeControl());
      v.put("postbox.broker", "negative-control");
    }
    // A request killed mid-transaction leaves its key claimed; its retry takes over after this.
    v.put("postbox.idempotency.in-flight-timeout", "5s");
    // Each order's hold (a scheduled OrderHoldExpired, cancelled by the charge) is short, so kills,
    // outages and backlogs let some fire: both ends of a hold are crash-tested (#36).
    v.put("payments.hold", HOLD);
    v.putAll(settings.overrides());
    return v;
  }

  /**
   * Spans when no server ran (a single server's restart), or the broker or the database was down: a
   * hold's lateness in them is not the relay's.
   */
  private volatile String lateNet = "-"; // set by the verdict's read of the holds

  private final List<Instant[]> outages = java.util.Collections.synchronizedList(new ArrayList<>());

  /** The orders' hold in these runs ({@code payments.hold}). */
  static final String HOLD = "4s";

  /** When the clients started placing orders (System.nanoTime). */
  private volatile long clientsStarted;

  /**
   * With several servers the clients never wait for a restart (they move to another server), and
   * would place every order before the chaos is half done. There, orders are spread over at least
   * {@link #STEP_SPREAD} per chaos step, so every step lands while orders, the relay and the inbox
   * are busy. A load shape, not a wait for a result.
   */
  private void paceOrder(int i) {
    boolean single = servers.size() == 1;
    long steps =
        settings.kills()
            + (settings.pause() ? 1 : 0)
            + (settings.brokerRestart() ? 1 : 0)
            + (single && !settings.databasePause().isZero() && db.canPause() ? 1 : 0)
            + (single && settings.handlerFailures() > 0 ? 1 : 0);
    if (!single) {
      long spread = STEP_SPREAD.toNanos() * (steps + 1);
      long due = clientsStarted + spread / settings.orders() * i;
      long wait = due - System.nanoTime();
      if (wait > 0) {
        pause(Duration.ofNanos(wait));
      }
    }
    // A step (a restart under load, a pause, a database outage) can take longer than its share of
    // time: the clients never get more than one step's share of orders ahead of the chaos, so the
    // last steps still land while orders flow instead of after the last one. (A single-server
    // SQS run once placed its last orders while the failures step waited, and the last kill's
    // window, an HTTP request's commit, was never reached.)
    synchronized (chaosProgress) {
      while ((long) i * (steps + 1) >= (long) settings.orders() * (chaosDone + 2)) {
        try {
          chaosProgress.wait();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }

  /**
   * The least time a chaos step's share of orders is spread over. The chaos gate below keeps every
   * step inside the orders however long it takes; this only keeps the orders from arriving in one
   * burst. (25 s made the two-server runs last five minutes each, with nothing more found; 12 s
   * until 2026-12-04, cut to 8 s to keep CI's time with a fifth two-server run, RabbitMQ's; 6 s
   * since the fresh-clone CI took 53 min on a loaded machine.)
   */
  static final Duration STEP_SPREAD = Duration.ofSeconds(6);

  /** Chaos steps done so far (guarded by {@link #chaosProgress}). */
  private int chaosDone;

  private final Object chaosProgress = new Object();

  private void chaosStepDone(int done) {
    synchronized (chaosProgress) {
      chaosDone = done;
      chaosProgress.notifyAll();
    }
  }

  /** How many customers each client places orders for, one after another. */
  static final int CUSTOMERS_PER_CLIENT = 12;

  /**
   * Each client places orders with an idempotency key, retrying the same key until accepted, for
   * customers of its own: a customer's next order only after the previous one's 2xx, so the order
   * of acceptance is the order of commit, the true order of the customer's events (their key). A
   * client sends each order to its own server first and moves to the next one after an error, as a
   * load balancer would; its next order goes home again, so the clients stay spread over the
   * servers (an aimed kill needs requests on its server) instead of piling up where failures pushed
   * them.
   */
  private void placeOrders(int client, AtomicInteger next) {
    for (int i = next.getAndIncrement(); i < settings.orders(); i = next.getAndIncrement()) {
      int at = client % apis.size();
      paceOrder(i);
      long cents = 100 + (long) (Math.random() * 10_000);
      String customer = "torture-" + client + "-" + (i % CUSTOMERS_PER_CLIENT);
      String body = "{\"customer\":\"" + customer + "\",\"amountCents\":" + cents + "}";
      String key = keyPrefix + "-" + i;
      while (true) {
        try {
          HttpResponse<String> r = apis.get(at).post("/orders", body, "Idempotency-Key", key);
          if (r.statusCode() == 200 || r.statusCode() == 201) {
            String orderId = PaymentsApi.text(r.body(), "orderId");
            accepted.put(orderId, cents);
            committed
                .computeIfAbsent(
                    customer, k -> java.util.Collections.synchronizedList(new ArrayList<>()))
                .add(orderId);
            if (r.headers().firstValue("Idempotency-Replayed").isPresent()) {
              answeredFromKey.incrementAndGet(); // a retry found the order its first try placed
            }
            break;
          }
        } catch (RuntimeException serverDownOrTimedOut) {
          // killed mid-request, restarting or paused: retry with the same key, elsewhere
        }
        clientRetries.incrementAndGet();
        at = (at + 1) % apis.size();
        pause(Duration.ofMillis(200));
      }
    }
  }

  /**
   * The kills, the pause, the broker restart and the database pause, one after another, each once
   * the clients have placed a further share of the orders, so each lands while orders, the relay
   * and the inbox are all busy. Each kill aims at whichever server reaches its window first.
   *
   * @return when the last kill's server was back
   */
  private Instant runChaos(TortureBroker broker, ExecutorService clients) throws Exception {
    List<String> plan = new ArrayList<>();
    for (int k = 0; k < settings.kills(); k++) {
      plan.add("kill");
    }
    if (settings.brokerRestart()) {
      plan.add(Math.min(1, plan.size()), "broker");
    }
    // Several servers: the database outage and the injected failures are the single-server runs'
    // part; these runs spend their time on kills and the pause.
    boolean single = servers.size() == 1;
    if (single && !settings.databasePause().isZero() && db.canPause()) {
      plan.add(Math.min(2, plan.size()), "database");
    }
    if (single && settings.handlerFailures() > 0) {
      plan.add(Math.min(3, plan.size()), "failures");
    }
    if (settings.pause()) {
      plan.add(Math.min(1, plan.size()), "pause"); // early, while the relay is busy
    }
    try {
      return runSteps(plan, broker, clients);
    } finally {
      chaosStepDone(Integer.MAX_VALUE / 4); // whatever happened, the clients go on
    }
  }

  private Instant runSteps(List<String> plan, TortureBroker broker, ExecutorService clients)
      throws Exception {
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
          if (settings.negativeControl().equals("ack-on-poll")) {
            // acknowledged at the poll: a kill before the inbox commits loses the event (a failed
            // transaction no longer does, its event waits in the inbox's queue)
            phase = CrashPoints.INBOX_BEFORE_COMMIT;
          }
          Reached reached = armAny(phase + " hold");
          int target = reached != null ? reached.server() : (kills - 1) % servers.size();
          String held = reached != null ? reached.held() : null;
          VariantServer server = servers.get(target);
          Set<String> waiting = sqlReadable ? uncharged() : Set.of();
          Instant killedAt = Instant.now();
          server.kill();
          Files.deleteIfExists(crashPoints.get(target).resolve("armed")); // the restart runs free
          String who = servers.size() > 1 ? "server " + (target + 1) + ": " : "";
          if (held != null) {
            killsLanded.add(phase);
            chaos.add(who + "SIGKILL with " + held + " held, at " + state);
          } else {
            chaos.add(who + "SIGKILL at " + state + ", " + phase + " not reached within a minute");
          }
          if (servers.size() > 1 && step == plan.size() - 1) {
            // The last step, with other servers up: the restart runs beside the rest of the run
            // (the others carry the orders, as a load balancer's other members would); the run
            // joins it before its verdict (restartLast).
            lastKill = killedAt;
            restarting =
                java.util.concurrent.CompletableFuture.runAsync(
                    () -> {
                      server.start();
                      Instant ready = Instant.now();
                      if (sqlReadable) {
                        Resume r = resumed("server " + (target + 1), broker.orders, waiting, ready);
                        synchronized (resumes) {
                          resumes.add(r);
                        }
                      }
                    });
          } else {
            server.start();
            lastKill = Instant.now();
            if (servers.size() == 1) {
              outages.add(new Instant[] {killedAt, lastKill}); // no server ran
            }
            if (sqlReadable) {
              resumes.add(resumed("server " + (target + 1), broker.orders, waiting, lastKill));
            }
          }
        }
        case "pause" -> pauseALeaseHolder(state);
        case "failures" -> {
          String at =
              arm(0, CrashPoints.INBOX_BEFORE_COMMIT + " fail " + settings.handlerFailures());
          chaos.add(
              settings.handlerFailures()
                  + " inbox transactions failed before commit, the first at "
                  + (at != null ? at : "(never reached)")
                  + ", at "
                  + state);
        }
        case "broker" -> {
          Instant down = Instant.now();
          broker.restart();
          outages.add(new Instant[] {down, Instant.now()});
          chaos.add(broker.restartLabel() + " at " + state);
        }
        default -> {
          Instant down = Instant.now();
          db.pause(settings.databasePause());
          outages.add(new Instant[] {down, Instant.now()});
          chaos.add(
              db.kind() + " stopped " + settings.databasePause().toSeconds() + " s at " + state);
        }
      }
      chaosStepDone(step + 1);
    }
    return lastKill;
  }

  /** The accepted orders not charged yet. */
  private Set<String> uncharged() throws SQLException {
    Set<String> waiting = new HashSet<>(accepted.keySet());
    waiting.removeAll(chargedOrders());
    return waiting;
  }

  /** Orders charged, or expired (their hold fired first): settled either way. */
  private Set<String> chargedOrders() throws SQLException {
    Set<String> charged = new HashSet<>();
    try (Connection c = connect();
        Statement st = c.createStatement();
        ResultSet rs =
            st.executeQuery(
                "SELECT order_id FROM pay_ledger UNION SELECT order_id FROM pay_expiry")) {
      while (rs.next()) {
        charged.add(rs.getString(1));
      }
    }
    return charged;
  }

  /**
   * After a restart: of the orders that were waiting when the server died and still are now that it
   * is ready, when the inbox first handles one of their events again (a charge, or the expiry of an
   * order whose hold was published first), and when the last of them is settled (charged or
   * expired), within two minutes. The first is the resumption: an order whose hold fired while the
   * server was down settles only when its expiry comes through, behind the backlog the outage built
   * (a throughput, not a resumption; on SQS standard queues ~400 events once took 9 s here).
   */
  private Resume resumed(String server, String orders, Set<String> waitingAtKill, Instant ready) {
    Set<String> waiting = new HashSet<>(waitingAtKill);
    Set<String> handledAtReady;
    try {
      waiting.removeAll(chargedOrders());
      handledAtReady = handledEvents(orders).keySet();
    } catch (SQLException e) {
      return new Resume(server, -1, null, null);
    }
    if (waiting.isEmpty()) {
      return new Resume(server, 0, null, null);
    }
    int total = waiting.size();
    AtomicLong first = new AtomicLong();
    try {
      org.awaitility.Awaitility.await()
          .atMost(Duration.ofMinutes(2))
          .pollInterval(Duration.ofMillis(100))
          .until(
              () -> {
                if (first.get() == 0) {
                  try {
                    Map<String, String> handled = handledEvents(orders);
                    handled.keySet().removeAll(handledAtReady);
                    if (handled.values().stream().anyMatch(waiting::contains)) {
                      first.compareAndSet(0, System.currentTimeMillis());
                    }
                  } catch (SQLException down) {
                    // the database is away: nothing handled either
                  }
                }
                Set<String> charged = quietlyCharged();
                int before = waiting.size();
                waiting.removeAll(charged);
                if (waiting.size() < before) {
                  first.compareAndSet(0, System.currentTimeMillis());
                }
                return waiting.isEmpty();
              });
      return new Resume(
          server,
          total,
          Duration.ofMillis(first.get() - ready.toEpochMilli()),
          Duration.between(ready, Instant.now()));
    } catch (org.awaitility.core.ConditionTimeoutException stillWaiting) {
      return new Resume(
          server,
          total,
          first.get() == 0 ? null : Duration.ofMillis(first.get() - ready.toEpochMilli()),
          null);
    }
  }

  /**
   * The orders' events (a charge's or a hold's) the payments inbox has handled: event id to order
   * id.
   */
  private Map<String, String> handledEvents(String orders) throws SQLException {
    Map<String, String> handled = new HashMap<>();
    try (Connection c = connect();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT o.event_id, o.subject FROM postbox_outbox o JOIN postbox_inbox i"
                    + " ON i.event_id = o.event_id WHERE i.subscription = ?"
                    + " AND o.event_type IN ('OrderCaptured', 'OrderHoldExpired')")) {
      ps.setString(1, orders + "/payments");
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          handled.put(rs.getString(1), rs.getString(2));
        }
      }
    }
    return handled;
  }

  private Set<String> quietlyCharged() {
    try {
      return chargedOrders();
    } catch (SQLException down) {
      return Set.of();
    }
  }

  /**
   * Holds a relay thread of one server between publishing a batch and marking it, stops the whole
   * process (SIGSTOP) until the other servers have taken every lease it held, then resumes it and
   * lets the thread go on: it must mark nothing (it says so in its log).
   */
  private void pauseALeaseHolder(String state) throws Exception {
    Reached reached = armAny(CrashPoints.RELAY_PUBLISHED_NOT_MARKED + " hold");
    int target = reached != null ? reached.server() : leaseHolder();
    VariantServer server = servers.get(target);
    String held = reached != null ? reached.held() : null;
    if (held == null) {
      fencing =
          "no relay batch of server "
              + (target + 1)
              + " (pid "
              + server.pid()
              + ") reached the window within a minute; leases by owner: "
              + quietlyLeases()
              + "; pending rows by lease owner: "
              + quietlyPendingByOwner()
              + "; published per server: "
              + publishedPerServer()
              + "; "
              + quietlyThreadDump(server);
      Files.deleteIfExists(crashPoints.get(target).resolve("armed"));
      return;
    }
    String owner = "%-" + server.pid() + "-%"; // instance ids hold the process id
    long leasesBefore = leasesOwnedLike(owner);
    Instant stopped = Instant.now();
    server.pause();
    // Until the others hold every lease it held; or, where its open transaction still locks a
    // lease row (it was paused inside a claim), until all its leases have expired and the others
    // have had three lease durations to take the rest.
    long[] kept = new long[1];
    try {
      org.awaitility.Awaitility.await()
          .atMost(Duration.ofMinutes(2))
          .pollInterval(Duration.ofMillis(200))
          .until(
              () -> {
                kept[0] = leasesOwnedLike(owner);
                long seconds = Duration.between(stopped, Instant.now()).toSeconds();
                return seconds >= 6 // longer than the lease (5 s)
                    && (kept[0] == 0 || (unexpiredLeasesOwnedLike(owner) == 0 && seconds >= 15));
              });
    } finally {
      server.resume();
    }
    Duration pausedFor = Duration.between(stopped, Instant.now());
    Files.deleteIfExists(crashPoints.get(target).resolve("armed")); // the held thread goes on
    String refusal = "lost the partition's lease while it published";
    try {
      org.awaitility.Awaitility.await()
          .atMost(Duration.ofMinutes(1))
          .pollInterval(Duration.ofMillis(200))
          .until(() -> server.log().contains(refusal));
      String line = server.log().lines().filter(l -> l.contains(refusal)).findFirst().orElseThrow();
      fencing =
          "server "
              + (target + 1)
              + " held with "
              + held
              + " and "
              + leasesBefore
              + " leases, SIGSTOP for "
              + pausedFor.toMillis()
              + " ms (lease 5 s) until the others held "
              + (kept[0] == 0
                  ? "all its leases"
                  : "all but "
                      + kept[0]
                      + " (expired, their rows locked by its paused transaction)")
              + "; after SIGCONT it tried to mark its batch and was refused: "
              + line.substring(line.indexOf("outbox partition"));
    } catch (org.awaitility.core.ConditionTimeoutException notRefused) {
      fencing = null; // the contract fails the run: the resumed instance was not fenced
      chaos.add("server " + (target + 1) + " resumed after the pause and was not refused");
    }
    chaos.add("server " + (target + 1) + " paused " + pausedFor.toMillis() + " ms at " + state);
  }

  private String publishedPerServer() {
    List<String> out = new ArrayList<>();
    for (PaymentsApi a : apis) {
      try {
        out.add(
            a.get("/metrics")
                .body()
                .lines()
                .filter(
                    l ->
                        l.startsWith("postbox_outbox_published_total")
                            || l.startsWith("postbox_outbox_fenced"))
                .toList()
                .toString());
      } catch (RuntimeException e) {
        out.add("(" + e + ")");
      }
    }
    return out.toString();
  }

  private String quietlyPendingByOwner() {
    try {
      return perOrder(
              "SELECT COALESCE(l.owner, '-'), COUNT(*) FROM postbox_outbox o JOIN postbox_lease l"
                  + " ON l.partition_no = o.partition_no WHERE o.status = 'PENDING' GROUP BY 1")
          .toString();
    } catch (SQLException e) {
      return "(unreadable: " + e.getMessage() + ")";
    }
  }

  private static String quietlyThreadDump(VariantServer server) {
    try {
      return "threads: " + server.threadDump();
    } catch (Exception e) {
      return "(no thread dump: " + e + ")";
    }
  }

  private String quietlyLeases() {
    try {
      return perOrder(
              "SELECT CONCAT(owner, ' until ', lease_until), COUNT(*) FROM postbox_lease GROUP BY 1")
          .toString();
    } catch (SQLException e) {
      return "(unreadable: " + e.getMessage() + ")";
    }
  }

  /**
   * The server to pause: of those holding unexpired leases, the one with the most (the second
   * server when several tie, or none can be read); one holding none has no relay batch to hold.
   */
  private int leaseHolder() {
    int best = servers.size() > 1 ? 1 : 0;
    long most = -1;
    for (int i : servers.size() > 1 ? new int[] {1, 2, 0} : new int[] {0}) {
      if (i >= servers.size()) {
        continue;
      }
      try {
        long held = unexpiredLeasesOwnedLike("%-" + servers.get(i).pid() + "-%");
        if (held > most) {
          most = held;
          best = i;
        }
      } catch (SQLException unreadable) {
        return best;
      }
    }
    return best;
  }

  private long unexpiredLeasesOwnedLike(String pattern) throws SQLException {
    try (Connection c = connect();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT COUNT(*) FROM postbox_lease WHERE owner LIKE ?"
                    + " AND lease_until > CURRENT_TIMESTAMP")) {
      ps.setString(1, pattern);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  private long leasesOwnedLike(String pattern) throws SQLException {
    try (Connection c = connect();
        PreparedStatement ps =
            c.prepareStatement("SELECT COUNT(*) FROM postbox_lease WHERE owner LIKE ?")) {
      ps.setString(1, pattern);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /** A crash point reached: the server (its index) and the point and thread it wrote. */
  private record Reached(int server, String held) {}

  /**
   * Arms a crash point, in {@code hold} mode, in every server and waits until a thread of one of
   * them reaches it; the others are disarmed at once (a thread one of them holds goes on). With
   * several servers a window is not open on a given one at every moment (its relay may hold no
   * lease just then, its consumer receive nothing), so a step aims at its window on whichever
   * server gets there first, and the others keep working.
   *
   * @return the server and the point and thread that reached it, or null if none did within a
   *     minute
   */
  private Reached armAny(String line) throws IOException {
    for (Path points : crashPoints) {
      Files.deleteIfExists(points.resolve("reached"));
    }
    for (Path points : crashPoints) {
      Files.writeString(points.resolve("armed"), line);
    }
    int[] first = {-1};
    try {
      org.awaitility.Awaitility.await()
          .atMost(Duration.ofMinutes(1))
          .pollInterval(Duration.ofMillis(20))
          .until(
              () -> {
                for (int i = 0; i < crashPoints.size(); i++) {
                  if (Files.exists(crashPoints.get(i).resolve("reached"))) {
                    first[0] = i;
                    return true;
                  }
                }
                return false;
              });
    } catch (org.awaitility.core.ConditionTimeoutException notReached) {
      for (Path points : crashPoints) {
        Files.deleteIfExists(points.resolve("armed"));
      }
      for (int i = 0; i < crashPoints.size(); i++) {
        if (Files.exists(crashPoints.get(i).resolve("reached"))) {
          chaos.add(
              "server "
                  + (i + 1)
                  + ": "
                  + line
                  + " reached only after the minute (counted as not reached)");
        }
      }
      return null;
    }
    for (int i = 0; i < crashPoints.size(); i++) {
      if (i != first[0]) {
        Files.deleteIfExists(crashPoints.get(i).resolve("armed"));
      }
    }
    return new Reached(first[0], Files.readString(crashPoints.get(first[0]).resolve("reached")));
  }

  /**
   * Arms a crash point in a running server and waits until a thread reaches it.
   *
   * @return the point and the thread that reached it, or null if none did within a minute
   */
  private String arm(int server, String line) throws IOException {
    Path points = crashPoints.get(server);
    Path reached = points.resolve("reached");
    Files.deleteIfExists(reached);
    Files.writeString(points.resolve("armed"), line);
    try {
      org.awaitility.Awaitility.await()
          .atMost(Duration.ofMinutes(1))
          .pollInterval(Duration.ofMillis(20))
          .until(() -> Files.exists(reached));
      return Files.readString(reached);
    } catch (org.awaitility.core.ConditionTimeoutException notReached) {
      // Disarm, then look once more: a point reached just as the minute ran out (a thread that
      // got there late) counts as not reached, but the run says so instead of hiding it.
      Files.deleteIfExists(points.resolve("armed"));
      if (Files.exists(reached)) {
        chaos.add(
            "server "
                + (server + 1)
                + ": "
                + line
                + " reached only after the minute (counted as not reached)");
      }
      return null;
    }
  }

  /**
   * Waits until every accepted order is charged and notified and nothing is in flight; or, when
   * some never will be (a negative control loses them), until nothing is left to publish and the
   * counts have not moved for {@link #QUIET} seconds, far longer than the longest retry back-off (2
   * s).
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
                long expired = quietly(this::expiryCount);
                long captured = quietly(() -> capturedHandled(orders));
                // copies the inbox rejects are work too: after a kill a consumer can spend more
                // than QUIET rejecting redelivered copies before it reaches new events (a
                // MariaDB run stopped waiting so, 491 events still to handle)
                long copies = quietly(() -> duplicatesRejected(orders));
                boolean nothingToPublish =
                    quietly(this::undispatched) == 0 && republisher.caughtUp(orders);
                long counts =
                    java.util.Objects.hash(charges, notifications, expired, captured, copies);
                if (lastCounts.getAndSet(counts) != counts) {
                  countsChangedAt.set(now);
                }
                // every order charged (and notified) or expired, once its hold fired first
                boolean settled =
                    charges >= 0
                        && expired >= 0
                        && charges + expired >= accepted.size()
                        && notifications >= charges
                        && captured >= accepted.size()
                        && nothingToPublish;
                if (!settled) {
                  firstSettled.set(0);
                  stuck.set(nothingToPublish && now - countsChangedAt.get() >= QUIET.toMillis());
                  return stuck.get();
                }
                firstSettled.compareAndSet(0, now);
                // settled, and still so three seconds on: nothing more is coming
                return now - firstSettled.get() >= 3_000;
              });
      if (stuck.get()) {
        chaos.add(
            "stopped waiting: orders missing and nothing moved for " + QUIET.toSeconds() + " s");
        return Duration.between(lastKill, Instant.ofEpochMilli(countsChangedAt.get()));
      }
      return Duration.between(lastKill, Instant.ofEpochMilli(firstSettled.get()));
    } catch (org.awaitility.core.ConditionTimeoutException notDrained) {
      chaos.add("did not drain within " + patience.toSeconds() + " s");
      return Duration.between(lastKill, Instant.now()); // the verdict will say what is missing
    }
  }

  /** How long the counts must stand still, with nothing to publish, before orders count as lost. */
  static final Duration QUIET = Duration.ofSeconds(20); // above SQS FIFO's 15 s visibility

  /**
   * What a failed drain left behind: the rows still to publish, the leases, the server's threads.
   */
  private String diagnose() {
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
      // per partition: its lease and what waits in it (a stall shows as one owner's partitions)
      perOrder(
              "SELECT CONCAT('partition ', o.partition_no, ' ', o.status, ' owner ',"
                  + " COALESCE(l.owner, '-'), ' until ', COALESCE(CAST(l.lease_until AS CHAR(40)),"
                  + " '-')), COUNT(*) FROM postbox_outbox o LEFT JOIN postbox_lease l"
                  + " ON l.partition_no = o.partition_no WHERE o.status IN ('PENDING',"
                  + " 'SCHEDULED', 'SCHEDULED_KEY') GROUP BY 1")
          .forEach((row, count) -> d.append(count).append(" x ").append(row).append("; "));
      perOrder("SELECT CONCAT(subscription, ' ', status), COUNT(*) FROM postbox_inbox GROUP BY 1")
          .forEach((row, count) -> d.append(count).append(" inbox ").append(row).append("; "));
      perOrder("SELECT CONCAT(event_type, ' ', status), COUNT(*) FROM postbox_outbox GROUP BY 1")
          .forEach((row, count) -> d.append(count).append(" outbox ").append(row).append("; "));
      // deliveries whose handler keeps failing (each retry of one rewinds a Kafka partition)
      perOrder(
              "SELECT CONCAT(subscription, ' ', event_id, ' attempts=', attempts, ' error=',"
                  + " COALESCE(last_error, '-')), attempts FROM postbox_inbox_attempt")
          .forEach((row, n) -> d.append("failing: ").append(row).append("; "));
      d.append("now ").append(Instant.now()).append("; ");
    } catch (SQLException e) {
      d.append("(database: ").append(e.getMessage()).append(") ");
    }
    for (int i = 0; i < servers.size(); i++) {
      // the server's warnings and errors, each kind once with how often (lock waits, deadlocks,
      // a consumer's rebalances), before its threads
      Map<String, Integer> warnings = new java.util.LinkedHashMap<>();
      for (String line : servers.get(i).log().split("\n")) {
        int at = line.indexOf(" W ");
        at = at < 0 ? line.indexOf(" E ") : at;
        if (at > 0) {
          String text = line.substring(at + 3).replaceAll("[0-9a-f-]{8,}|[0-9]+", "#");
          warnings.merge(text.length() > 240 ? text.substring(0, 240) : text, 1, Integer::sum);
        }
      }
      d.append("server ").append(i + 1).append(" warnings: ");
      warnings.forEach((w, n) -> d.append(n).append(" x ").append(w).append("; "));
      try {
        d.append("server ").append(i + 1).append(" threads: ").append(servers.get(i).threadDump());
      } catch (Exception e) {
        d.append("(server ").append(i + 1).append(": no thread dump: ").append(e).append(')');
      }
    }
    return d.toString();
  }

  private TortureVerdict verdict(TortureBroker broker) throws SQLException {
    Map<String, List<String>> placed = new HashMap<>();
    committed.forEach(
        (customer, orders) -> {
          synchronized (orders) {
            placed.put(customer, List.copyOf(orders));
          }
        });
    Map<String, Long> expiries =
        perOrder("SELECT order_id, COUNT(*) FROM pay_expiry GROUP BY order_id");
    Map<String, Long> charges =
        perOrder("SELECT order_id, COUNT(*) FROM pay_ledger GROUP BY order_id");
    // An expired order is never charged: its customer's stream of charges goes on without it.
    placed.replaceAll(
        (customer, orders) ->
            orders.stream()
                .filter(o -> !expiries.containsKey(o) || charges.containsKey(o))
                .toList());
    Map<String, Long> holds =
        perOrder(
            "SELECT status, COUNT(*) FROM postbox_outbox WHERE event_type = 'OrderHoldExpired'"
                + " GROUP BY status");
    return TortureVerdict.judge(
            Map.copyOf(accepted),
            charges,
            perOrder("SELECT order_id, COUNT(*) FROM pay_notification GROUP BY order_id"),
            expiries,
            single("SELECT COALESCE(SUM(amount_cents), 0) FROM pay_ledger"),
            undispatched(),
            perOrder(
                "SELECT reason, COUNT(*) FROM postbox_dead_letter WHERE status = 'OPEN'"
                    + " GROUP BY reason"),
            settings.poison(),
            duplicatesRejected(broker),
            republished.get())
        .inOrder("charges", placed, applied("pay_ledger"), broker.ordered())
        .inOrder("notifications", placed, applied("pay_notification"), broker.ordered())
        .holds(
            holds.getOrDefault("CANCELLED", 0L),
            holds.getOrDefault("DISPATCHED", 0L),
            holds.getOrDefault("SCHEDULED", 0L) + holds.getOrDefault("SCHEDULED_KEY", 0L),
            single(
                "SELECT COUNT(DISTINCT l.order_id) FROM pay_ledger l JOIN postbox_outbox o"
                    + " ON o.subject = l.order_id AND o.event_type = 'OrderHoldExpired'"
                    + " WHERE o.status <> 'CANCELLED'"),
            single(
                "SELECT COUNT(*) FROM postbox_outbox o WHERE o.event_type = 'OrderHoldExpired'"
                    + " AND o.status = 'CANCELLED' AND (EXISTS (SELECT 1 FROM pay_expiry e"
                    + " WHERE e.event_id = o.event_id) OR EXISTS (SELECT 1 FROM postbox_inbox i"
                    + " WHERE i.event_id = o.event_id))"),
            settings.negativeControl().equals("fresh-ids")
                ? 0
                : singleWith(
                    "SELECT COUNT(DISTINCT e.order_id) FROM pay_expiry e WHERE NOT EXISTS (SELECT 1"
                        + " FROM postbox_outbox o JOIN postbox_inbox i ON i.event_id = o.event_id"
                        + " WHERE i.subscription = ? AND o.subject = e.order_id"
                        + " AND o.event_type = 'OrderCaptured')",
                    broker.orders + "/payments"),
            expiries.size(),
            holdLateness());
  }

  /**
   * Per published hold, when it was settled (dispatched_at) minus when it fell due (created_at,
   * which the relay sets to the due time when the row falls due), both in the database's clock.
   */
  private List<Duration> holdLateness() throws SQLException {
    List<Duration> out = new ArrayList<>();
    List<Duration> net = new ArrayList<>();
    try (Connection c = connect();
        Statement st = c.createStatement();
        ResultSet rs =
            st.executeQuery(
                "SELECT created_at, dispatched_at FROM postbox_outbox"
                    + " WHERE event_type = 'OrderHoldExpired' AND status = 'DISPATCHED'")) {
      dev.postbox.runtime.db.Dialect dialect = dev.postbox.runtime.db.Dialect.of(c);
      while (rs.next()) {
        Instant due = dialect.read(rs, "created_at");
        Instant published = dialect.read(rs, "dispatched_at");
        out.add(Duration.between(due, published));
        net.add(TortureVerdict.netOf(due, published, List.copyOf(outages)));
      }
    }
    lateNet = TortureVerdict.spread(net);
    return out;
  }

  /** Per customer, the effects in a table in the order of their numbers. */
  private Map<String, List<TortureVerdict.Applied>> applied(String table) throws SQLException {
    Map<String, List<TortureVerdict.Applied>> out = new HashMap<>();
    try (Connection c = connect();
        Statement st = c.createStatement();
        ResultSet rs =
            st.executeQuery(
                "SELECT customer, order_id, account_seq FROM "
                    + table
                    + " WHERE customer IS NOT NULL ORDER BY customer, account_seq")) {
      while (rs.next()) {
        out.computeIfAbsent(rs.getString(1), k -> new ArrayList<>())
            .add(new TortureVerdict.Applied(rs.getString(2), rs.getLong(3)));
      }
    }
    return out;
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

  /**
   * The OrderCaptured events the payments inbox recorded (an expired order's too: its charge found
   * the hold gone); read after the servers stop on the embedded database.
   */
  private long capturedHandled(String orders) throws SQLException {
    if (!sqlReadable || settings.negativeControl().equals("fresh-ids")) {
      return Long.MAX_VALUE; // fresh-ids: the inbox records the copies' new ids, never the events'
    }
    return singleWith(
        "SELECT COUNT(*) FROM postbox_inbox i JOIN postbox_outbox o ON o.event_id = i.event_id"
            + " WHERE i.subscription = ? AND o.event_type = 'OrderCaptured'",
        orders + "/payments");
  }

  private long singleWith(String sql, String param) throws SQLException {
    try (Connection c = connect();
        PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, param);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  private long expiryCount() throws SQLException {
    return sqlReadable
        ? single("SELECT COUNT(*) FROM pay_expiry")
        : PaymentsApi.number(okBody(api.get("/ledger")), "expired");
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
    return duplicatesRejected(broker.orders);
  }

  private long duplicatesRejected(String orders) throws SQLException {
    try (Connection c = connect();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT COALESCE(SUM(duplicates), 0) FROM postbox_inbox_counter"
                    + " WHERE subscription = ?")) {
      ps.setString(1, orders + "/payments");
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
