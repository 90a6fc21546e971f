package dev.postbox.runtime.relay;

import dev.postbox.benchmarks.PostgresSchema;
import dev.postbox.benchmarks.Report;
import dev.postbox.broker.kafka.testing.KafkaTestBroker;
import dev.postbox.runtime.CallerTransaction;
import dev.postbox.runtime.Postbox;
import dev.postbox.runtime.PostboxSettings;
import dev.postbox.runtime.api.OutboxEvent;
import dev.postbox.runtime.api.OutboxRow;
import dev.postbox.runtime.api.RelayListener;
import dev.postbox.runtime.api.Schedule;
import dev.postbox.runtime.outbox.FailedRowRepository;
import dev.postbox.runtime.outbox.OutboxRepository;
import dev.postbox.runtime.outbox.ScheduledRepository;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

/**
 * Scheduled events (docs/outbox.md, "Scheduled and expiring events"), measured two ways, with peers
 * in the same run:
 *
 * <ol>
 *   <li><b>The claim with a million scheduled rows:</b> the relay's claim transaction (promote the
 *       due scheduled rows, read the waiting keys, claim 500 due rows of a partition; rolled back,
 *       so the backlog stays) on an outbox with 1,000,000 scheduled rows due in the next day,
 *       beside the same on one with none; both with a backlog of 8,000 due rows. Also the due
 *       timer's look-ups (due partitions, next due time) and the lag reading, which counts
 *       scheduled rows.
 *   <li><b>Lateness:</b> publish time minus due time of events scheduled 0.5–2 s ahead, idle and
 *       beside a load of 500 unscheduled events/s, on one instance (which records them, so its due
 *       timer knows each), and with two instances (half the events' partitions held by the other,
 *       which hears of each due time through PostgreSQL's NOTIFY, or at its poll, every 500 ms).
 * </ol>
 *
 * <p>Needs the local PostgreSQL (127.0.0.1:5432, database {@code test}); starts a KRaft broker in
 * this JVM.
 *
 * <p>Run: {@code ./mvnw -q -pl benchmarks -am install -DskipTests && ./mvnw -q -pl benchmarks
 * exec:java -Dexec.mainClass=dev.postbox.runtime.relay.ScheduledBenchmark -Dexec.args="--rounds 3"}
 */
public final class ScheduledBenchmark {

  private static final int SCHEDULED_ROWS = 1_000_000;
  private static final int BACKLOG = 8_000;
  private static final int PARTITIONS = 16;
  private static final int CLAIMS_PER_ROUND = 200;
  private static final int LATENESS_EVENTS = 300;
  private static final int LOAD_PER_SECOND = 500;

  private ScheduledBenchmark() {}

  public static void main(String[] args) throws Exception {
    Report report = Report.of("scheduled", args);
    report.machine("database", PostgresSchema.version());
    KafkaTestBroker kafka = KafkaTestBroker.start();
    System.out.printf(
        "scheduled benchmark: PostgreSQL, in-JVM Kafka, %d cores, %d rounds%n",
        Runtime.getRuntime().availableProcessors(), report.rounds());
    try (PostgresSchema none = new PostgresSchema("");
        PostgresSchema million = new PostgresSchema("")) {
      backlog(none);
      backlog(million);
      long t0 = System.nanoTime();
      scheduled(million, SCHEDULED_ROWS);
      System.out.printf(
          "  %,d scheduled rows written in %d s%n",
          SCHEDULED_ROWS, TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - t0));
      for (int round = 1; round <= report.rounds(); round++) {
        claim(report, "claim, no scheduled rows", none);
        claim(report, "claim, 1M scheduled rows", million);
        lookups(report, "due timer and lag, no scheduled rows", none);
        lookups(report, "due timer and lag, 1M scheduled rows", million);
        System.out.printf("  round %d: claims done%n", round);
      }
    }
    for (int round = 1; round <= report.rounds(); round++) {
      lateness(report, kafka, "idle, 1 instance", false, 1, 500);
      lateness(report, kafka, "500 events/s, 1 instance", true, 1, 500);
      lateness(report, kafka, "idle, 2 instances", false, 2, 500);
      lateness(report, kafka, "idle, 2 instances, 100-400 ms ahead", false, 2, 100);
      System.out.printf("  round %d: lateness done%n", round);
    }
    report.goal(
        "1M scheduled rows do not slow the claim (median within 1.5x of none)",
        "claim, 1M scheduled rows",
        "claim ms p50",
        "<",
        1.5 * report.figure("claim, no scheduled rows", "claim ms p50").median());
    report.finish();
    kafka.close();
  }

  // ---- the claim ----

  /** 8,000 due rows over the partitions, as a relay that fell behind finds them. */
  private static void backlog(PostgresSchema s) {
    rows(s, "due-", "Due", "PENDING", 2_000, "clock_timestamp()", BACKLOG);
  }

  /** Rows due over the next day, an hour from now on, in every partition. */
  private static void scheduled(PostgresSchema s, int rows) {
    rows(
        s,
        "sched-",
        "Reminder",
        "SCHEDULED",
        100_000,
        "clock_timestamp() + INTERVAL '1 hour' + (g % 86400) * INTERVAL '1 second'",
        rows);
  }

  /** Writes {@code rows} rows in one statement; the arguments are this class's constants. */
  private static void rows(
      PostgresSchema s,
      String idPrefix,
      String type,
      String status,
      int keys,
      String due,
      int rows) {
    s.tx.inTransaction(
        c -> {
          try (PreparedStatement ps =
              c.prepareStatement(
                  "INSERT INTO postbox_outbox (event_id, destination, partition_no, event_key,"
                      + " event_type, source, headers, payload, event_time, created_at, status,"
                      + " attempts, next_attempt_at) SELECT ? || g, 'bench', g % ?, 'k' || (g % ?),"
                      + " ?, 'urn:bench', '{}', '\\x7b7d'::bytea, clock_timestamp(),"
                      + " clock_timestamp(), ?, 0, "
                      + due
                      + " FROM generate_series(1, ?) g")) {
            ps.setString(1, idPrefix);
            ps.setInt(2, PARTITIONS);
            ps.setInt(3, keys);
            ps.setString(4, type);
            ps.setString(5, status);
            ps.setInt(6, rows);
            ps.executeUpdate();
          }
          return null;
        });
    analyze(s);
  }

  private static void analyze(PostgresSchema s) {
    s.tx.inTransaction(
        c -> {
          try (PreparedStatement ps = c.prepareStatement("ANALYZE postbox_outbox")) {
            ps.execute();
          }
          return null;
        });
  }

  /**
   * The relay's claim transaction, as PublishTurn runs it for one partition, every partition in
   * turn, rolled back: p50 and p99 over 200 claims.
   */
  private static void claim(Report report, String peer, PostgresSchema s) throws SQLException {
    OutboxRepository rows = new OutboxRepository(s.dialect, PARTITIONS);
    ScheduledRepository scheduled = new ScheduledRepository(s.dialect);
    List<Long> micros = new ArrayList<>();
    try (Connection c = s.pool.getConnection()) {
      c.setAutoCommit(false);
      for (int i = 0; i < CLAIMS_PER_ROUND; i++) {
        int p = i % PARTITIONS;
        Instant now = Instant.now();
        long t0 = System.nanoTime();
        scheduled.promoteDue(c, List.of(p), now);
        OutboxRepository.Waiting waiting = rows.waiting(c, List.of(p), now);
        int got = rows.claim(c, p, now, 500, waiting).size();
        micros.add(TimeUnit.NANOSECONDS.toMicros(System.nanoTime() - t0));
        c.rollback();
        if (got == 0) {
          throw new IllegalStateException("the backlog is gone: partition " + p + " claimed none");
        }
      }
    }
    Collections.sort(micros);
    report.add(peer, "claim ms p50", "ms", micros.get(micros.size() / 2) / 1000.0);
    report.add(peer, "claim ms p99", "ms", micros.get(micros.size() * 99 / 100) / 1000.0);
  }

  /** The due timer's look-ups and the lag reading (every 2 s), median of 50 each. */
  private static void lookups(Report report, String peer, PostgresSchema s) {
    ScheduledRepository scheduled = new ScheduledRepository(s.dialect);
    FailedRowRepository lag = new FailedRowRepository(s.dialect);
    List<Long> timer = new ArrayList<>();
    List<Long> lagReads = new ArrayList<>();
    List<Long> counts = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      Instant now = Instant.now();
      long t0 = System.nanoTime();
      s.tx.inTransaction(
          c -> {
            scheduled.partitionsWithDueScheduled(c, now);
            return scheduled.nextScheduledDue(c, now);
          });
      long t1 = System.nanoTime();
      s.tx.inTransaction(c -> lag.lag(c, false, Instant.now()));
      long t2 = System.nanoTime();
      s.tx.inTransaction(c -> lag.lag(c, true, Instant.now()));
      long t3 = System.nanoTime();
      timer.add(TimeUnit.NANOSECONDS.toMicros(t1 - t0));
      lagReads.add(TimeUnit.NANOSECONDS.toMicros(t2 - t1));
      counts.add(TimeUnit.NANOSECONDS.toMicros(t3 - t2));
    }
    Collections.sort(timer);
    Collections.sort(lagReads);
    Collections.sort(counts);
    report.add(peer, "due timer look-up ms p50", "ms", timer.get(25) / 1000.0);
    report.add(peer, "lag reading (every 2 s) ms p50", "ms", lagReads.get(25) / 1000.0);
    report.add(peer, "lag with scheduled count (every 30 s) ms p50", "ms", counts.get(25) / 1000.0);
  }

  // ---- lateness ----

  /**
   * Records 300 events due 0.5–2 s ahead over about 10 s (with a load of unscheduled events beside
   * them, if asked) and measures each one's publish time (the relay's "publishing", this JVM's
   * clock) minus its due time (the row's, the database's clock: the same machine's here).
   */
  private static void lateness(
      Report report,
      KafkaTestBroker kafka,
      String peer,
      boolean load,
      int instances,
      int soonestMillis)
      throws Exception {
    String topic = "sched-" + UUID.randomUUID();
    kafka.createTopic(topic, 4);
    Map<String, Long> lateMicros = new ConcurrentHashMap<>();
    RelayListener listener =
        new RelayListener() {
          @Override
          public void publishing(List<OutboxRow> batch) {
            Instant now = Instant.now();
            for (OutboxRow r : batch) {
              if (r.type().equals("Reminder")) {
                lateMicros.putIfAbsent(
                    r.eventId(), Duration.between(r.createdAt(), now).toNanos() / 1_000);
              }
            }
          }
        };
    try (PostgresSchema s = new PostgresSchema("")) {
      List<Postbox> boxes = new ArrayList<>();
      for (int i = 0; i < instances; i++) {
        boxes.add(
            Postbox.builder()
                .settings(
                    PostboxSettings.parse(
                        Map.of(
                            "postbox.broker", "kafka",
                            "postbox.broker.bootstrap.servers", kafka.bootstrapServers(),
                            "postbox.partitions", "16",
                            "postbox.instance-id", "bench-" + i,
                            "postbox.durability.accept-unsafe", "true")))
                .dataSource(s.pool)
                .relayListener(listener)
                .start());
      }
      Postbox recorder = boxes.get(0);
      if (instances > 1) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (boxes.stream().anyMatch(b -> b.outboxOperations().ownedPartitions().isEmpty())) {
          if (System.nanoTime() > deadline) {
            throw new IllegalStateException("the instances did not share the partitions");
          }
          Thread.sleep(100); // a setup wait for the leases, not a measurement
        }
      }
      AtomicBoolean stop = new AtomicBoolean();
      ExecutorService loaders = Executors.newFixedThreadPool(2);
      if (load) {
        for (int t = 0; t < 2; t++) {
          loaders.execute(
              () -> {
                long every = TimeUnit.SECONDS.toNanos(1) / (LOAD_PER_SECOND / 2);
                long next = System.nanoTime();
                int n = 0;
                while (!stop.get()) {
                  record(s, recorder, event(topic, "load-" + (n++ % 200), "Load"), Schedule.NOW);
                  next += every;
                  java.util.concurrent.locks.LockSupport.parkNanos(next - System.nanoTime());
                }
              });
        }
      }
      Random dice = new Random(7);
      List<String> ids = new ArrayList<>();
      long every = TimeUnit.SECONDS.toNanos(10) / LATENESS_EVENTS;
      long next = System.nanoTime();
      for (int i = 0; i < LATENESS_EVENTS; i++) {
        // 0.5-2 s ahead; or 0.1-0.4 s, shorter than the poll interval (500 ms)
        Duration delay =
            Duration.ofMillis(soonestMillis + dice.nextInt(soonestMillis == 500 ? 1_500 : 300));
        ids.add(record(s, recorder, event(topic, "r-" + i, "Reminder"), Schedule.after(delay)));
        next += every;
        java.util.concurrent.locks.LockSupport.parkNanos(next - System.nanoTime());
      }
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (!lateMicros.keySet().containsAll(ids) && System.nanoTime() < deadline) {
        Thread.sleep(50); // waiting for the last due times to pass
      }
      stop.set(true);
      loaders.shutdown();
      loaders.awaitTermination(10, TimeUnit.SECONDS);
      boxes.forEach(Postbox::close);
      List<Long> late = new ArrayList<>();
      ids.forEach(id -> late.add(lateMicros.getOrDefault(id, Long.MAX_VALUE)));
      Collections.sort(late);
      if (late.get(late.size() - 1) == Long.MAX_VALUE) {
        throw new IllegalStateException(peer + ": scheduled events not published within 60 s");
      }
      report.add(peer, "lateness ms p50", "ms", late.get(late.size() / 2) / 1000.0);
      report.add(peer, "lateness ms p99", "ms", late.get(late.size() * 99 / 100) / 1000.0);
      report.add(peer, "lateness ms max", "ms", late.get(late.size() - 1) / 1000.0);
    }
  }

  private static String record(
      PostgresSchema s, Postbox postbox, OutboxEvent e, Schedule schedule) {
    try (Connection c = s.pool.getConnection()) {
      c.setAutoCommit(false);
      Tx tx = new Tx(c);
      String id = postbox.record(tx, e, schedule);
      c.commit();
      tx.after.forEach(Runnable::run);
      return id;
    } catch (SQLException ex) {
      throw new IllegalStateException(ex);
    }
  }

  private static OutboxEvent event(String topic, String key, String type) {
    return OutboxEvent.builder()
        .destination(topic)
        .key(key)
        .type(type)
        .source("urn:bench")
        .json("{\"n\":1}")
        .build();
  }

  /** The caller's transaction over one JDBC connection (the benchmark's own). */
  private static final class Tx implements CallerTransaction {
    private final Connection c;
    private final Map<Object, Object> values = new java.util.HashMap<>();
    private final List<Runnable> after = new ArrayList<>();

    Tx(Connection c) {
      this.c = c;
    }

    @Override
    public void checkActive() {}

    @Override
    public Connection connection() {
      return (Connection)
          java.lang.reflect.Proxy.newProxyInstance(
              Connection.class.getClassLoader(),
              new Class<?>[] {Connection.class},
              (proxy, method, args) ->
                  method.getName().equals("close") ? null : method.invoke(c, args));
    }

    @Override
    public void setRollbackOnly() {}

    @Override
    @SuppressWarnings("unchecked")
    public <T> T perTransaction(
        Object key, java.util.function.Supplier<T> create, Consumer<T> afterCommit) {
      return (T)
          values.computeIfAbsent(
              key,
              k -> {
                T v = create.get();
                after.add(() -> afterCommit.accept(v));
                return v;
              });
    }
  }
}
