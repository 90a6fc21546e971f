package dev.postbox.benchmarks.app;

import dev.postbox.benchmarks.Report;
import dev.postbox.broker.kafka.testing.KafkaTestBroker;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

/**
 * The payments app end to end, as a user runs it on Liberty: {@code POST /orders} writes the order
 * and its event in one transaction; the relay publishes it; the payments handler charges it through
 * the inbox and records a {@code PaymentReceived} event; the notifications handler tells the
 * customer. Peers in the same run, on the same server, as endpoints of a benchmark build only
 * ({@code app.endpoints}, added to this harness's copy of the WAR):
 *
 * <ul>
 *   <li><b>bare</b>: the same request writes the order and no event: the web and database path
 *       alone, the ceiling;
 *   <li><b>bypass</b>: the order is committed, then its event published from the request (unsafe: a
 *       crash between the two loses it); the rest of the chain is the same.
 * </ul>
 *
 * <p>Each round runs every peer at full speed ({@code --orders} requests from {@code --clients}
 * concurrent clients): accepted orders/s, and for the peers with a chain, drained orders/s (from
 * the first request to the last notification, in the server's own timestamps). Then each at a fixed
 * rate, half of what {@code /orders} accepted at full speed in the first round, for {@code
 * --seconds}: the POST's latency (from when the request was due, so a stalled server is not hidden)
 * and order→notification latency (the order row's and the notification row's times).
 *
 * <p>{@code --jfr DIR} records a profile of each server over its rounds (Java Flight Recorder,
 * {@code settings=profile}) into {@code DIR/<setup>.jfr}; {@code benchmarks/scripts/jfr-top.sh}
 * summarises one.
 *
 * <p>Setups, one server each ({@code --setups}, default all): {@code postgresql-kafka} (the local
 * PostgreSQL, a KRaft broker in this JVM), {@code postgresql-artemis} (the local PostgreSQL, the
 * app's embedded Artemis), {@code embedded} (the app's defaults: H2 file and embedded Artemis).
 *
 * <p>Run: {@code ./mvnw -q -B -pl benchmarks,runtime-liberty/payments-app -am install -DskipTests
 * -DskipITs && ./mvnw -q -B -pl benchmarks -Papp package -DskipTests && ./mvnw -q -B -pl benchmarks
 * exec:java -Dexec.mainClass=dev.postbox.benchmarks.app.AppBenchmark} (or {@code
 * benchmarks/scripts/run-all.sh app}).
 */
public final class AppBenchmark {

  private static final String PG = "jdbc:postgresql://127.0.0.1:5432/test?user=postgres";
  private static final String POSTBOX = "postbox";
  private static final String BARE = "bare";
  private static final String BYPASS = "bypass";
  private static final Map<String, String> PATHS =
      Map.of(POSTBOX, "/orders", BARE, "/bench/bare", BYPASS, "/bench/bypass");
  private static final Duration DRAIN_LIMIT = Duration.ofMinutes(5);

  private final Report report;
  private final HttpClient http =
      HttpClient.newBuilder()
          .version(HttpClient.Version.HTTP_1_1)
          .connectTimeout(Duration.ofSeconds(10))
          .build();
  private int orders = 2_000;
  private int clients = 16;
  private int seconds = 6;
  private Path jfr;

  private AppBenchmark(Report report) {
    this.report = report;
  }

  public static void main(String[] args) throws Exception {
    Report report = Report.of("app", args);
    AppBenchmark bench = new AppBenchmark(report);
    List<String> setups = List.of("postgresql-kafka", "postgresql-artemis", "embedded");
    List<String> rest = report.args();
    for (int i = 0; i < rest.size(); i++) {
      switch (rest.get(i)) {
        case "--orders" -> bench.orders = Integer.parseInt(rest.get(++i));
        case "--clients" -> bench.clients = Integer.parseInt(rest.get(++i));
        case "--seconds" -> bench.seconds = Integer.parseInt(rest.get(++i));
        case "--setups" -> setups = List.of(rest.get(++i).split(","));
        case "--jfr" -> bench.jfr = Path.of(rest.get(++i));
        default -> throw new IllegalArgumentException("unknown option " + rest.get(i));
      }
    }
    Path target =
        Path.of(AppBenchmark.class.getProtectionDomain().getCodeSource().getLocation().toURI())
            .getParent();
    if (!Files.isDirectory(target.resolve("liberty/wlp"))) {
      throw new IllegalStateException(
          "no Liberty under "
              + target
              + "/liberty: run ./mvnw -B -pl benchmarks -Papp package -DskipTests first");
    }
    Path serverXml =
        repositoryRoot(target)
            .resolve("runtime-liberty/payments-app/src/main/liberty/config/server.xml");
    System.out.printf(
        "app benchmark: POST /orders -> relay -> charge -> notify; %d orders at full speed from %d"
            + " clients, then %d s at half that rate; %d cores, Java %s, %d rounds%n",
        bench.orders,
        bench.clients,
        bench.seconds,
        Runtime.getRuntime().availableProcessors(),
        System.getProperty("java.version"),
        report.rounds());
    report.machine(
        "database",
        setups.stream().anyMatch(s -> s.startsWith("postgresql"))
            ? dev.postbox.benchmarks.PostgresSchema.version() + "; H2 (embedded)"
            : "H2 (embedded)");
    report.machine("server", "Open Liberty (the build's runtime), one server per setup");
    for (String setup : setups) {
      bench.setup(setup, target, serverXml);
    }
    report.finish();
  }

  private static Path repositoryRoot(Path target) {
    for (Path p = target.toAbsolutePath(); p != null; p = p.getParent()) {
      if (Files.isRegularFile(
          p.resolve("runtime-liberty/payments-app/src/main/liberty/config/server.xml"))) {
        return p;
      }
    }
    throw new IllegalStateException("not inside the Postbox repository: " + target);
  }

  private void setup(String setup, Path target, Path serverXml) throws Exception {
    Map<String, String> vars = new LinkedHashMap<>();
    vars.put("payments.dev-mode", "true");
    String schema = null;
    KafkaTestBroker kafka = null;
    String adapter = null;
    if (setup.startsWith("postgresql")) {
      schema = "bench_app_" + UUID.randomUUID().toString().replace("-", "").substring(0, 10);
      try (Connection c = DriverManager.getConnection(PG);
          Statement s = c.createStatement()) {
        s.execute("CREATE SCHEMA " + schema); // a generated name, not input
      }
      vars.put("db.url", "jdbc:postgresql://127.0.0.1:5432/test?currentSchema=" + schema);
      vars.put("db.driver", "org.postgresql.Driver");
      vars.put("db.user", "postgres");
      vars.put("db.password", "");
    }
    switch (setup) {
      case "postgresql-kafka" -> {
        kafka = KafkaTestBroker.start();
        kafka.createTopic("orders", 8);
        kafka.createTopic("payments", 8);
        adapter = "kafka";
        vars.put("postbox.broker", "kafka");
        vars.put("postbox.broker.bootstrap.servers", kafka.bootstrapServers());
        vars.put("payments.embedded-artemis", "false");
      }
      case "postgresql-artemis", "embedded" -> {
        // the app's default profile (-Partemis): an Artemis server inside the app, on vm://0
        vars.put("postbox.broker", "artemis");
        vars.put("postbox.broker.url", "vm://0");
        vars.put("payments.embedded-artemis", "true");
      }
      default -> throw new IllegalArgumentException("unknown setup " + setup);
    }
    System.out.printf("%n== %s%n", setup);
    try (AppServer server = new AppServer(target, serverXml, "bench-" + setup, adapter, vars)) {
      server.start();
      String url = server.url();
      // Warm-up, not recorded: every path once at full speed, until the JIT has seen it.
      for (String peer : List.of(POSTBOX, BARE, BYPASS)) {
        fullSpeed(url, peer, Math.min(orders, 1_000), "warm" + shortId());
      }
      awaitDrained(url);
      if (jfr != null) {
        // A profile of the server over the rounds, for where the time goes (docs/benchmarks.md).
        server.jcmd("JFR.start", "name=bench", "settings=profile");
      }
      for (int round = 1; round <= report.rounds(); round++) {
        System.out.printf("%s round %d: full speed%n", setup, round);
        List<String> peers = List.of(POSTBOX, BARE, BYPASS);
        for (int k = 0; k < peers.size(); k++) {
          String peer = peers.get((k + round - 1) % peers.size());
          CpuMeter cpu = CpuMeter.start(server.pid());
          FullSpeed r = fullSpeed(url, peer, orders, "r" + round + shortId());
          report.add(setup + ": " + peer, "accepted", "orders/s", r.accepted());
          if (!peer.equals(BARE)) {
            double drained = r.drained(this, url);
            report.add(setup + ": " + peer, "drained", "orders/s", drained);
            report.add(
                setup + ": " + peer, "drained / accepted", "%", 100 * drained / r.accepted());
          }
          if (cpu != null) {
            cpu(setup + ": " + peer, cpu.stop());
          }
        }
        double postbox = report.last(setup + ": " + POSTBOX, "accepted");
        report.add(
            setup + ": " + POSTBOX,
            "share of bare",
            "%",
            100 * postbox / report.last(setup + ": " + BARE, "accepted"));
        for (String peer : List.of(POSTBOX, BYPASS)) {
          idle(url, setup, peer, "i" + round + shortId());
        }
      }
      // Half the maximum: the median of /orders at full speed over every round, so a cold first
      // round does not set it. Then the fixed-rate rounds, interleaved like the others.
      double rate =
          Math.max(1, Math.floor(report.figure(setup + ": " + POSTBOX, "accepted").median() / 2));
      report.machine(setup + " fixed rate", (long) rate + " orders/s");
      List<String> peers = List.of(POSTBOX, BARE, BYPASS);
      for (int round = 1; round <= report.rounds(); round++) {
        System.out.printf("%s round %d: %.0f orders/s for %d s%n", setup, round, rate, seconds);
        for (int k = 0; k < peers.size(); k++) {
          String peer = peers.get((k + round - 1) % peers.size());
          fixedRate(url, setup, peer, rate, "f" + round + shortId());
        }
      }
      if (jfr != null) {
        Files.createDirectories(jfr);
        Path file = jfr.resolve(setup + ".jfr").toAbsolutePath();
        server.jcmd("JFR.dump", "name=bench", "filename=" + file);
        System.out.println("profile: " + file);
      }
    } finally {
      if (kafka != null) {
        kafka.close();
      }
      if (schema != null) {
        try (Connection c = DriverManager.getConnection(PG);
            Statement s = c.createStatement()) {
          s.execute("DROP SCHEMA " + schema + " CASCADE");
        }
      }
    }
    report.goal(
        setup + ": /orders >= 70 % of bare", setup + ": " + POSTBOX, "share of bare", ">=", 70);
    report.goal(
        setup + ": the chain keeps up (drained >= 90 % of accepted)",
        setup + ": " + POSTBOX,
        "drained / accepted",
        ">=",
        90);
    report.goal(
        setup + ": order->notification p99 < 100 ms at half the maximum",
        setup + ": " + POSTBOX + " @ half rate",
        "order->notification p99",
        "<",
        100);
    if (setup.equals("postgresql-kafka")) {
      report.goal(
          setup + ": /orders >= 1,500 orders/s (5x ~300)",
          setup + ": " + POSTBOX,
          "accepted",
          ">=",
          1_500);
    }
  }

  /**
   * Where the cores went while a full-speed peer ran (until drained): CPU milliseconds per order of
   * the server, of PostgreSQL, and of this JVM (the load generator, and the Kafka broker in that
   * setup); and the share of the machine left idle or waiting for the disk.
   */
  private void cpu(String peer, Map<String, Double> used) {
    for (String p : List.of("server", "postgres", "harness")) {
      report.add(peer, "CPU of " + p, "ms/order", 1000 * used.get(p) / orders);
    }
    double capacity = used.get("wall") * Runtime.getRuntime().availableProcessors();
    report.add(peer, "machine idle", "%", 100 * used.get("idle") / capacity);
    report.add(peer, "machine in iowait", "%", 100 * used.get("iowait") / capacity);
    System.out.printf(
        "  %-8s CPU ms/order: server %.2f, postgres %.2f, harness %.2f; idle %.0f %%, iowait %.0f %%%n",
        peer.substring(peer.indexOf(": ") + 2),
        1000 * used.get("server") / orders,
        1000 * used.get("postgres") / orders,
        1000 * used.get("harness") / orders,
        100 * used.get("idle") / capacity,
        100 * used.get("iowait") / capacity);
  }

  private static String shortId() {
    return UUID.randomUUID().toString().replace("-", "").substring(0, 8);
  }

  /** One full-speed run: when it started (epoch ms), how long it took, its customers' prefix. */
  private record FullSpeed(
      String peer, int orders, long startedEpochMs, double seconds, String prefix) {
    double accepted() {
      return orders / seconds;
    }

    /** Orders/s from the first request to the last notification, once every order is notified. */
    double drained(AppBenchmark bench, String url) throws Exception {
      List<long[]> times = bench.awaitNotified(url, prefix, orders);
      long last = times.stream().mapToLong(t -> t[1]).max().orElseThrow();
      return orders / Math.max(0.001, (last - startedEpochMs) / 1000.0);
    }
  }

  private FullSpeed fullSpeed(String url, String peer, int n, String prefix) throws Exception {
    AtomicInteger next = new AtomicInteger();
    AtomicInteger refused = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(clients);
    long startedEpochMs = System.currentTimeMillis();
    long started = System.nanoTime();
    List<Future<?>> done = new ArrayList<>();
    for (int c = 0; c < clients; c++) {
      done.add(
          pool.submit(
              () -> {
                for (int i; (i = next.getAndIncrement()) < n; ) {
                  if (post(url, peer, prefix, i) != 201) {
                    refused.incrementAndGet();
                  }
                }
                return null;
              }));
    }
    for (Future<?> f : done) {
      f.get();
    }
    double secs = (System.nanoTime() - started) / 1e9;
    pool.shutdown();
    if (refused.get() > 0) {
      throw new IllegalStateException(peer + ": " + refused + " of " + n + " orders refused");
    }
    System.out.printf(
        "  %-8s full speed %,6d orders in %6.2f s: %,8.0f orders/s%n", peer, n, secs, n / secs);
    return new FullSpeed(peer, n, startedEpochMs, secs, prefix);
  }

  /**
   * Requests at a fixed rate for {@link #seconds}, each sent when due by a pool large enough not to
   * queue them; a request's latency runs from when it was due.
   */
  private void fixedRate(String url, String setup, String peer, double rate, String prefix)
      throws Exception {
    int n = (int) (rate * seconds);
    Recorder post = new Recorder(3);
    ExecutorService pool = Executors.newFixedThreadPool(64);
    AtomicInteger refused = new AtomicInteger();
    long period = (long) (1e9 / rate);
    long start = System.nanoTime();
    List<Future<?>> done = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      long due = start + i * period;
      long wait = due - System.nanoTime();
      if (wait > 0) {
        LockSupport.parkNanos(wait);
      }
      int id = i;
      done.add(
          pool.submit(
              () -> {
                if (post(url, peer, prefix, id) != 201) {
                  refused.incrementAndGet();
                }
                post.recordValue(Math.max(1, (System.nanoTime() - due) / 1_000));
                return null;
              }));
    }
    for (Future<?> f : done) {
      f.get();
    }
    pool.shutdown();
    if (refused.get() > 0) {
      throw new IllegalStateException(peer + ": " + refused + " of " + n + " orders refused");
    }
    String name = setup + ": " + peer + " @ half rate";
    Histogram h = post.getIntervalHistogram();
    report.add(name, "POST p50", "ms", h.getValueAtPercentile(50) / 1000.0);
    report.add(name, "POST p99", "ms", h.getValueAtPercentile(99) / 1000.0);
    String line =
        String.format(
            "  %-8s %5.0f/s POST p50 %6.1f ms p99 %6.1f ms",
            peer, rate, h.getValueAtPercentile(50) / 1000.0, h.getValueAtPercentile(99) / 1000.0);
    if (!peer.equals(BARE)) {
      Histogram e2e = new Histogram(3);
      for (long[] t : awaitNotified(url, prefix, n)) {
        e2e.recordValue(Math.max(1, t[1] - t[0]));
      }
      report.add(name, "order->notification p50", "ms", (double) e2e.getValueAtPercentile(50));
      report.add(name, "order->notification p99", "ms", (double) e2e.getValueAtPercentile(99));
      line +=
          String.format(
              "; order->notification p50 %d ms p99 %d ms",
              e2e.getValueAtPercentile(50), e2e.getValueAtPercentile(99));
    }
    System.out.println(line);
  }

  /**
   * One order at a time on an idle server, each waited for until notified: the chain's own latency,
   * without queueing behind other orders.
   */
  private void idle(String url, String setup, String peer, String prefix) throws Exception {
    Histogram h = new Histogram(3);
    for (int i = 0; i < IDLE_ORDERS; i++) {
      if (post(url, peer, prefix, i) != 201) {
        throw new IllegalStateException(peer + ": an idle order was refused");
      }
      long deadline = System.nanoTime() + DRAIN_LIMIT.toNanos();
      while (notified(url, prefix) < i + 1) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException(peer + ": an idle order was never notified");
        }
        TimeUnit.MILLISECONDS.sleep(10);
      }
    }
    for (long[] t : latencies(url, prefix)) {
      h.recordValue(Math.max(1, t[1] - t[0]));
    }
    String name = setup + ": " + peer + " idle";
    report.add(name, "order->notification p50", "ms", (double) h.getValueAtPercentile(50));
    report.add(name, "order->notification max", "ms", (double) h.getMaxValue());
    System.out.printf(
        "  %-8s idle, one order at a time: order->notification p50 %d ms, max %d ms%n",
        peer, h.getValueAtPercentile(50), h.getMaxValue());
  }

  private static final int IDLE_ORDERS = 20;

  private int post(String url, String peer, String prefix, int i)
      throws IOException, InterruptedException {
    String body = "{\"customer\":\"" + prefix + "-" + (i % CUSTOMERS) + "\",\"amountCents\":1999}";
    HttpRequest request =
        HttpRequest.newBuilder(URI.create(url + PATHS.get(peer)))
            .timeout(Duration.ofSeconds(60))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build();
    return http.send(request, HttpResponse.BodyHandlers.discarding()).statusCode();
  }

  private static final Pattern PAIR = Pattern.compile("\\[(\\d+),(\\d+)\\]");

  /** Waits until every order of the prefix has its notification; returns their times. */
  private List<long[]> awaitNotified(String url, String prefix, int expected) throws Exception {
    long deadline = System.nanoTime() + DRAIN_LIMIT.toNanos();
    long notified;
    while ((notified = notified(url, prefix)) < expected) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(
            prefix + ": " + notified + " of " + expected + " notified after " + DRAIN_LIMIT);
      }
      TimeUnit.MILLISECONDS.sleep(250); // the harness waits for the app, not a test for its code
    }
    List<long[]> times = latencies(url, prefix);
    if (notified > expected || times.size() != expected) {
      throw new IllegalStateException(
          prefix
              + ": "
              + notified
              + " notifications for "
              + times.size()
              + " orders, expected "
              + expected);
    }
    return times;
  }

  /**
   * The bench endpoints' query string for one run's customers: {@code <prefix>-0 .. <prefix>-99},
   * looked up by their index (see {@link #post}).
   */
  private static String customers(String prefix) {
    return "customerPrefix=" + prefix + "-&customers=" + CUSTOMERS;
  }

  private static final int CUSTOMERS = 100;

  private long notified(String url, String prefix) throws Exception {
    return Long.parseLong(get(url, "/bench/notified?" + customers(prefix)).trim());
  }

  private List<long[]> latencies(String url, String prefix) throws Exception {
    String body = get(url, "/bench/latencies?" + customers(prefix));
    List<long[]> out = new ArrayList<>();
    Matcher m = PAIR.matcher(body.replace(" ", ""));
    while (m.find()) {
      out.add(new long[] {Long.parseLong(m.group(1)), Long.parseLong(m.group(2))});
    }
    return out;
  }

  private String get(String url, String path) throws Exception {
    HttpResponse<String> r =
        http.send(
            HttpRequest.newBuilder(URI.create(url + path)).timeout(Duration.ofSeconds(60)).build(),
            HttpResponse.BodyHandlers.ofString());
    if (r.statusCode() != 200) {
      throw new IllegalStateException("GET " + path + ": " + r.statusCode() + " " + r.body());
    }
    return r.body();
  }

  /** Waits until the warm-up's orders are all notified, so they do not load the first round. */
  private void awaitDrained(String url) throws Exception {
    long deadline = System.nanoTime() + DRAIN_LIMIT.toNanos();
    while (true) {
      HttpResponse<String> r =
          http.send(
              HttpRequest.newBuilder(URI.create(url + "/ledger")).build(),
              HttpResponse.BodyHandlers.ofString());
      Matcher orders = Pattern.compile("\"orders\":(\\d+)").matcher(r.body());
      Matcher notified = Pattern.compile("\"notifications\":(\\d+)").matcher(r.body());
      Matcher charges = Pattern.compile("\"charges\":(\\d+)").matcher(r.body());
      if (orders.find() && notified.find() && charges.find()) {
        long bare = Math.min(this.orders, 1_000);
        if (Long.parseLong(notified.group(1)) >= Long.parseLong(orders.group(1)) - bare) {
          return;
        }
      }
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("the warm-up never drained: " + r.body());
      }
      TimeUnit.MILLISECONDS.sleep(250);
    }
  }
}
