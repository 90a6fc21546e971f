package dev.postbox.runtime.relay;

import dev.postbox.benchmarks.PostgresSchema;
import dev.postbox.benchmarks.Report;
import dev.postbox.broker.kafka.testing.KafkaTestBroker;
import dev.postbox.runtime.api.OutboxEvent;
import dev.postbox.runtime.api.OutboxRow;
import dev.postbox.runtime.api.RelayListener;
import dev.postbox.runtime.outbox.OutboxRepository;
import dev.postbox.runtime.outbox.Partitioner;
import dev.postbox.spi.Broker;
import dev.postbox.spi.Brokers;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.Publisher;
import dev.postbox.spi.testing.TestBroker;
import dev.postbox.spi.testing.TestBrokers;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

/**
 * The outbox relay from PostgreSQL to Kafka, measured two ways, with peers in the same run:
 *
 * <ol>
 *   <li><b>Throughput:</b> 50,000 committed events drained by 1 relay instance, then by 2 and 3;
 *       beside them the two limits of one instance: a null broker (claims and marks only, the
 *       database's limit) and the same envelopes sent straight through the adapter (the broker's).
 *   <li><b>Commit→publish latency</b> at a steady 1,000 events/s, one event per transaction: the
 *       relay woken after each commit (what the Jakarta wiring's after-commit synchronization
 *       does), beside a polling-only relay at a 1 s interval, as polling outboxes work.
 * </ol>
 *
 * <p>Latency is from the row's {@code created_at} (written in the business transaction just before
 * its commit) to the commit of the relay transaction that published it, so it includes the broker's
 * acknowledgement. Needs the local PostgreSQL (127.0.0.1:5432, database {@code test}); starts a
 * KRaft broker in this JVM unless {@code --bootstrap host:port} names one.
 *
 * <p>Run: {@code ./mvnw -q -pl benchmarks -am install -DskipTests && ./mvnw -q -pl benchmarks
 * exec:java -Dexec.mainClass=dev.postbox.runtime.relay.RelayBenchmark}; {@code
 * -Dexec.args=--rabbitmq} adds, in every round, one relay instance draining to RabbitMQ and
 * RabbitMQ's producer-only limit (the machine's server, a vhost of the run's own, quorum queues in
 * 4 shards)
 */
public final class RelayBenchmark {

  private static final int THROUGHPUT_EVENTS = 50_000;
  private static final int RATE = 1_000;
  private static final Duration LATENCY_RUN = Duration.ofSeconds(10);
  private static final Duration WARM_UP = Duration.ofSeconds(3);

  private RelayBenchmark() {}

  public static void main(String[] args) throws Exception {
    Report report = Report.of("relay", args);
    List<String> rest = report.args();
    int b = rest.indexOf("--bootstrap");
    String bootstrap = b >= 0 && b + 1 < rest.size() ? rest.get(b + 1) : null;
    // --rabbitmq: the same drain and the broker's limit on RabbitMQ too, as peers in each round.
    TestBroker rabbit = rest.contains("--rabbitmq") ? TestBrokers.named("rabbitmq").start() : null;
    Broker rabbitBroker =
        rabbit == null ? null : Brokers.open(rabbit.provider().adapter(), rabbit.config());
    KafkaTestBroker kafka = bootstrap == null ? KafkaTestBroker.start() : null;
    String servers = bootstrap != null ? bootstrap : kafka.bootstrapServers();
    System.out.printf(
        "relay benchmark: PostgreSQL -> Kafka (%s), %d cores, Java %s, %d rounds%n",
        bootstrap == null ? "in-JVM KRaft broker" : servers,
        Runtime.getRuntime().availableProcessors(),
        System.getProperty("java.version"),
        report.rounds());
    report.machine("broker", bootstrap == null ? "Kafka KRaft in the JVM" : "Kafka at " + servers);
    report.machine("database", PostgresSchema.version());
    try (Broker broker = Brokers.open("kafka", Map.of("bootstrap.servers", servers))) {
      for (int round = 1; round <= report.rounds(); round++) {
        System.out.printf(
            "%nround %d: drain %d committed events (64 partitions, batch 500, 4 workers/instance)%n",
            round, THROUGHPUT_EVENTS);
        System.out.printf("%-28s %12s %12s%n", "peer", "seconds", "events/s");
        // The limits of one instance on this machine, in the same round: the database alone (the
        // same claims and marks, a publisher that takes every batch at once) and the broker alone
        // (the same envelopes through the same adapter, in batches of 500 on 4 threads, no
        // database). Peers take turns first from round to round.
        List<Peer> peers =
            List.<Peer>of(
                () -> throughput(broker.publisher(), kafka, 1, ONE),
                () -> throughput(broker.publisher(), kafka, 2, "2 relay instances"),
                () -> throughput(broker.publisher(), kafka, 3, "3 relay instances"),
                () -> throughput((destination, envelope) -> {}, kafka, 1, NULL_BROKER),
                () -> producerOnly(broker.publisher(), kafka, PRODUCER));
        if (rabbitBroker != null) {
          peers = new ArrayList<>(peers);
          peers.add(() -> throughput(rabbitBroker.publisher(), null, 1, ONE_RABBITMQ));
          peers.add(() -> producerOnly(rabbitBroker.publisher(), null, PRODUCER_RABBITMQ));
        }
        for (int k = 0; k < peers.size(); k++) {
          Peer.Rate r = peers.get((k + round - 1) % peers.size()).run();
          report.add(r.name(), THROUGHPUT, "events/s", r.perSecond());
        }
        double one = report.last(ONE, THROUGHPUT);
        double lower =
            Math.min(report.last(NULL_BROKER, THROUGHPUT), report.last(PRODUCER, THROUGHPUT));
        report.add(ONE, SHARE, "%", 100 * one / lower);
        if (rabbitBroker != null) {
          report.add(
              ONE_RABBITMQ,
              SHARE,
              "%",
              100
                  * report.last(ONE_RABBITMQ, THROUGHPUT)
                  / Math.min(
                      report.last(NULL_BROKER, THROUGHPUT),
                      report.last(PRODUCER_RABBITMQ, THROUGHPUT)));
        }
        System.out.printf(
            "1 instance / lower limit: %.0f%% (of %,.0f events/s)%n", 100 * one / lower, lower);
        System.out.printf(
            "%ncommit->publish latency at %d events/s, one event per transaction, %d s after %d s"
                + " warm-up%n",
            RATE, LATENCY_RUN.toSeconds(), WARM_UP.toSeconds());
        System.out.printf(
            "%-28s %10s %10s %10s %10s %10s %10s %12s%n",
            "peer", "events", "p50 ms", "p99 ms", "p99.9 ms", "max ms", "written/s", "relay µs/ev");
        latency(report, broker, kafka, DEFAULTS, true, Duration.ofMillis(500), 4, 1, false);
        latency(
            report, broker, kafka, "wake-up, 8 workers", true, Duration.ofMillis(500), 8, 1, false);
        latency(
            report, broker, kafka, "polling every 1 s", false, Duration.ofSeconds(1), 4, 1, false);
        latency(
            report,
            broker,
            kafka,
            "2 instances, NOTIFY across",
            true,
            Duration.ofMillis(500),
            4,
            2,
            true);
      }
      if (rabbitBroker != null) {
        report.goal(
            "RabbitMQ: 1 instance >= 70 % of its producer-only limit",
            ONE_RABBITMQ, SHARE, ">=", 70);
      }
    } finally {
      if (kafka != null) {
        kafka.close();
      }
      if (rabbitBroker != null) {
        rabbitBroker.close();
        rabbit.close();
      }
    }
    report.goal("1 instance >= 70 % of the lower limit", ONE, SHARE, ">=", 70);
    report.goal("1 instance >= 35,000 events/s", ONE, THROUGHPUT, ">=", 35_000);
    report.goal("p99 < 10 ms at 1,000 events/s, default settings", DEFAULTS, "p99", "<", 10);
    report.finish();
  }

  private static final String THROUGHPUT = "throughput";
  private static final String SHARE = "share of lower limit";
  private static final String ONE = "1 relay instance";
  private static final String NULL_BROKER = "limit: null broker";
  private static final String PRODUCER = "limit: producer only";
  private static final String ONE_RABBITMQ = "RabbitMQ: 1 relay instance";
  private static final String PRODUCER_RABBITMQ = "RabbitMQ: limit: producer only";
  private static final String DEFAULTS = "after-commit wake-up";

  /** A throughput peer of one round. */
  private interface Peer {
    record Rate(String name, double perSecond) {}

    Rate run() throws Exception;
  }

  /** The broker's limit: the drain's envelopes sent straight through the adapter. */
  private static Peer.Rate producerOnly(Publisher publisher, KafkaTestBroker kafka, String label)
      throws Exception {
    String topic = topic(kafka, 8);
    List<List<Envelope>> batches = new ArrayList<>();
    List<Envelope> batch = new ArrayList<>();
    for (int i = 0; i < THROUGHPUT_EVENTS; i++) {
      OutboxEvent e = event(topic, "key-" + (i % 1_000), i);
      batch.add(
          Envelope.builder()
              .id(e.eventId())
              .source(e.source())
              .type(e.type())
              .key(e.key())
              .payload(e.payload())
              .build());
      if (batch.size() == 500) {
        batches.add(batch);
        batch = new ArrayList<>();
      }
    }
    ConcurrentLinkedQueue<List<Envelope>> queue = new ConcurrentLinkedQueue<>(batches);
    ExecutorService threads = Executors.newFixedThreadPool(4);
    long started = System.nanoTime();
    List<Future<?>> done = new ArrayList<>();
    for (int t = 0; t < 4; t++) {
      done.add(
          threads.submit(
              () -> {
                for (List<Envelope> next; (next = queue.poll()) != null; ) {
                  publisher.publishAll(topic, next);
                }
              }));
    }
    for (Future<?> f : done) {
      f.get();
    }
    double seconds = (System.nanoTime() - started) / 1e9;
    threads.shutdown();
    System.out.printf("%-28s %12.2f %,12.0f%n", label, seconds, THROUGHPUT_EVENTS / seconds);
    return new Peer.Rate(label, THROUGHPUT_EVENTS / seconds);
  }

  private static Peer.Rate throughput(
      Publisher publisher, KafkaTestBroker kafka, int instances, String label) throws Exception {
    try (PostgresSchema schema = new PostgresSchema("&reWriteBatchedInserts=true")) {
      String topic = topic(kafka, 8);
      OutboxRepository repo = new OutboxRepository(schema.dialect, 64);
      List<OutboxEvent> batch = new ArrayList<>();
      for (int i = 0; i < THROUGHPUT_EVENTS; i++) {
        batch.add(event(topic, "key-" + (i % 1_000), i));
        if (batch.size() == 5_000) {
          insert(schema, repo, batch);
          batch.clear();
        }
      }
      List<RelayHandle> relays = new ArrayList<>();
      long started = System.nanoTime();
      for (int i = 0; i < instances; i++) {
        relays.add(
            RelayHandle.start(
                schema, publisher, "tp-" + i, Duration.ofMillis(200), RelayListener.NONE, 4));
      }
      while (relays.stream().mapToLong(r -> r.relay.publishedCount()).sum() < THROUGHPUT_EVENTS) {
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
      }
      double seconds = (System.nanoTime() - started) / 1e9;
      relays.forEach(RelayHandle::close);
      System.out.printf("%-28s %12.2f %,12.0f%n", label, seconds, THROUGHPUT_EVENTS / seconds);
      return new Peer.Rate(label, THROUGHPUT_EVENTS / seconds);
    }
  }

  /**
   * @param instances relays sharing the partitions; the writer runs beside the first, which it
   *     wakes after commit when that one holds the row's partition
   * @param announce whether, after a commit whose partition another instance holds, the writer's
   *     instance announces it (NOTIFY, sent and heard by each instance's {@link
   *     OutboxNotifications}); otherwise that instance finds the row at its next poll
   */
  private static void latency(
      Report report,
      Broker broker,
      KafkaTestBroker kafka,
      String name,
      boolean wake,
      Duration poll,
      int workers,
      int instances,
      boolean announce)
      throws Exception {
    try (PostgresSchema schema = new PostgresSchema("&reWriteBatchedInserts=true")) {
      String topic = topic(kafka, 8);
      OutboxRepository repo = new OutboxRepository(schema.dialect, 64);
      Recorder recorder = new Recorder(3);
      RelayListener listener =
          new RelayListener() {
            @Override
            public void published(List<OutboxRow> rows, Instant committedAt) {
              for (OutboxRow r : rows) {
                recorder.recordValue(
                    Math.max(0, Duration.between(r.createdAt(), committedAt).toNanos() / 1_000));
              }
            }
          };
      List<RelayHandle> relays = new ArrayList<>();
      List<OutboxNotifications> listeners = new ArrayList<>();
      for (int i = 0; i < instances; i++) {
        RelayHandle r =
            RelayHandle.start(schema, broker.publisher(), "lat-" + i, poll, listener, workers);
        relays.add(r);
        if (announce) {
          OutboxNotifications l = new OutboxNotifications(schema.pool, r.relay::wake, Thread::new);
          l.start();
          listeners.add(l);
        }
      }
      while (relays.stream().anyMatch(r -> r.relay.ownedPartitions().size() < 64 / instances)) {
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50)); // until the leases are shared
      }
      Relay local = relays.get(0).relay;
      long periodNanos = 1_000_000_000L / RATE;
      long start = System.nanoTime();
      long end = start + WARM_UP.plus(LATENCY_RUN).toNanos();
      long measureFrom = start + WARM_UP.toNanos();
      boolean measuring = false;
      long relayCpu0 = 0;
      long n = 0;
      long firstMeasured = -1;
      while (System.nanoTime() < end) {
        long due = start + n * periodNanos;
        long wait = due - System.nanoTime();
        if (wait > 0) {
          LockSupport.parkNanos(wait);
        }
        if (!measuring && System.nanoTime() >= measureFrom) {
          recorder.getIntervalHistogram(); // drop the warm-up
          measuring = true;
          firstMeasured = n;
          relayCpu0 = relayCpuNanos();
        }
        OutboxEvent e = event(topic, "key-" + (n % 200), (int) n);
        int partition = Partitioner.partition(e.key(), e.eventId(), 64);
        boolean held = local.ownedPartitions().contains(partition);
        schema.tx.inTransaction(
            c -> {
              repo.insert(c, e, Instant.now());
              return null;
            });
        // after the commit, as the Jakarta wiring does
        if (wake && held) {
          local.wake(partition);
        } else if (announce && !held) {
          listeners.get(0).announce(List.of(partition));
        }
        n++;
      }
      LockSupport.parkNanos(poll.toNanos() * 2 + TimeUnit.MILLISECONDS.toNanos(500));
      Histogram h = recorder.getIntervalHistogram();
      double relayMicrosPerEvent =
          (relayCpuNanos() - relayCpu0) / 1_000.0 / Math.max(1, h.getTotalCount());
      listeners.forEach(OutboxNotifications::close);
      relays.forEach(RelayHandle::close);
      report.add(name, "p50", "ms", ms(h.getValueAtPercentile(50)));
      report.add(name, "p99", "ms", ms(h.getValueAtPercentile(99)));
      // The writer shares the cores with the relay and the broker: what it managed to write is
      // the rate the latency was measured at, not always the 1,000/s asked for.
      report.add(
          name,
          "written per second",
          "events/s",
          (n - firstMeasured) / (double) LATENCY_RUN.toSeconds());
      report.add(name, "published in window", "events", h.getTotalCount());
      report.add(name, "relay CPU per event", "µs", relayMicrosPerEvent);
      System.out.printf(
          "%-28s %,10d %10.1f %10.1f %10.1f %10.1f %10.0f %12.1f%n",
          name,
          h.getTotalCount(),
          ms(h.getValueAtPercentile(50)),
          ms(h.getValueAtPercentile(99)),
          ms(h.getValueAtPercentile(99.9)),
          ms(h.getMaxValue()),
          (n - firstMeasured) / (double) LATENCY_RUN.toSeconds(),
          relayMicrosPerEvent);
    }
  }

  /**
   * CPU time of the relay's threads (its workers and scheduler, named {@code relay-*}) and of the
   * Kafka producer's network thread, in ns: what publishing costs in this JVM, without the writer
   * and the in-JVM broker.
   */
  private static long relayCpuNanos() {
    java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
    long sum = 0;
    for (java.lang.management.ThreadInfo t : mx.getThreadInfo(mx.getAllThreadIds())) {
      if (t != null
          && (t.getThreadName().startsWith("relay-")
              || t.getThreadName().startsWith("kafka-producer-network-thread"))) {
        long cpu = mx.getThreadCpuTime(t.getThreadId());
        if (cpu > 0) {
          sum += cpu;
        }
      }
    }
    return sum;
  }

  private static double ms(long micros) {
    return micros / 1000.0;
  }

  private static void insert(
      PostgresSchema schema, OutboxRepository repo, List<OutboxEvent> events) {
    List<OutboxEvent> copy = List.copyOf(events);
    schema.tx.inTransaction(
        c -> {
          repo.insertAll(c, copy, Instant.now());
          return null;
        });
  }

  private static OutboxEvent event(String topic, String key, int n) {
    return OutboxEvent.builder()
        .destination(topic)
        .key(key)
        .type("OrderCaptured")
        .source("urn:postbox:benchmark")
        .payload(
            ("{\"order\":" + n + ",\"amount\":1999,\"currency\":\"EUR\"}")
                .getBytes(StandardCharsets.UTF_8))
        .build();
  }

  private static String topic(KafkaTestBroker kafka, int partitions) {
    String name = "bench-" + UUID.randomUUID();
    if (kafka != null) {
      kafka.createTopic(name, partitions);
    }
    return name;
  }

  /** A relay instance with its own executors. */
  private record RelayHandle(
      Relay relay, ScheduledExecutorService scheduler, ExecutorService workers) {
    static RelayHandle start(
        PostgresSchema schema,
        Publisher publisher,
        String name,
        Duration poll,
        RelayListener listener,
        int workers) {
      RelaySettings settings =
          RelaySettings.defaults(name)
              .withPartitions(64)
              .withPollInterval(poll)
              .withWorkerThreads(workers);
      ScheduledExecutorService scheduler =
          Executors.newScheduledThreadPool(1, named("relay-" + name + "-scheduler"));
      ExecutorService pool =
          Executors.newFixedThreadPool(
              settings.workerThreads(), named("relay-" + name + "-worker"));
      Relay relay =
          new Relay(
              schema.tx,
              schema.dialect,
              publisher,
              settings,
              Clock.systemUTC(),
              scheduler,
              pool,
              listener);
      relay.start();
      return new RelayHandle(relay, scheduler, pool);
    }

    private static java.util.concurrent.ThreadFactory named(String prefix) {
      java.util.concurrent.atomic.AtomicInteger n = new java.util.concurrent.atomic.AtomicInteger();
      return r -> {
        Thread t = new Thread(r, prefix + "-" + n.incrementAndGet());
        t.setDaemon(true);
        return t;
      };
    }

    void close() {
      relay.close();
      scheduler.shutdownNow();
      workers.shutdownNow();
    }
  }
}
