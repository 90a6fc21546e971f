package dev.postbox.runtime.inbox;

import dev.postbox.benchmarks.PostgresSchema;
import dev.postbox.benchmarks.Report;
import dev.postbox.runtime.api.InboxListener;
import dev.postbox.spi.Broker;
import dev.postbox.spi.Brokers;
import dev.postbox.spi.Consumer;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Envelope;
import dev.postbox.spi.Subscription;
import dev.postbox.spi.testing.TestBroker;
import dev.postbox.spi.testing.TestBrokers;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * End to end on the receiver side: Kafka (or another broker) → inbox → handler (one business
 * insert) → commit → ack, on PostgreSQL, with peers in the same run, on the same broker and
 * database:
 *
 * <ul>
 *   <li><b>the per-message loop</b> of the seed projects: per delivery {@code BEGIN; SELECT 1 FROM
 *       inbox WHERE event_id=?; INSERT inbox; INSERT business; UPDATE inbox SET status='processed';
 *       COMMIT;} then ack;
 *   <li><b>Postbox's inbox</b>, batch mode (a poll batch per transaction, inbox rows in one round
 *       trip), with 1 lane and with 4 lanes;
 *   <li><b>Postbox's inbox in deferred mode</b>: a poll batch is recorded, queued, committed and
 *       acked; workers (1, then 4) claim the queued events and run the handler. The clock stops at
 *       the last handler's commit, not at the last ack.
 *   <li><b>The raw database</b>, the limit: the same inbox and business rows, 500 per transaction,
 *       one multi-row statement per table over plain JDBC, no broker.
 * </ul>
 *
 * <p>Each peer consumes the same number of events from a topic of its own, published beforehand;
 * the clock runs from its first poll to its last commit. Run: {@code ./mvnw -q -pl benchmarks -am
 * install -DskipTests && ./mvnw -q -pl benchmarks exec:java
 * -Dexec.mainClass=dev.postbox.runtime.inbox.InboxBenchmark}. Every peer runs once per round
 * ({@code --rounds N}, 5 by default; see {@link Report}); {@code -Dexec.args=storm} runs the
 * duplicate storm alone, and {@code extras} adds the storm and the scale-out after the rounds.
 * {@code --broker rabbitmq} runs the same peers on another registered test broker (the machine's
 * RabbitMQ, a vhost of the run's own) instead of Kafka, its results under {@code inbox-<name>}.
 */
public final class InboxBenchmark {

  private static final int EVENTS = 20_000;

  /** Events of each scale-out run: enough that one run takes seconds, not a rebalance's time. */
  private static final int SCALING_EVENTS = 60_000;

  private InboxBenchmark() {}

  public static void main(String[] args) throws Exception {
    String brokerName = "kafka";
    for (int i = 0; i + 1 < args.length; i++) {
      if (args[i].equals("--broker")) {
        brokerName = args[i + 1];
      }
    }
    Report report = Report.of(brokerName.equals("kafka") ? "inbox" : "inbox-" + brokerName, args);
    List<String> rest = report.args();
    // A registered test broker of the run's own: Kafka KRaft in the JVM by default, or any other
    // adapter's (--broker rabbitmq: a vhost of its own on the machine's RabbitMQ).
    try (TestBroker kafka = TestBrokers.named(brokerName).start();
        Broker broker = Brokers.open(kafka.provider().adapter(), kafka.config())) {
      System.out.printf(
          "inbox benchmark: %s -> inbox -> 1 business insert -> commit -> ack, PostgreSQL, %d events,"
              + " %d cores, Java %s%n",
          brokerName,
          EVENTS,
          Runtime.getRuntime().availableProcessors(),
          System.getProperty("java.version"));
      if (rest.contains("storm")) {
        storms(kafka, broker);
        return;
      }
      report.machine(
          "broker",
          brokerName.equals("kafka")
              ? "Kafka KRaft in the JVM"
              : brokerName + " (" + kafka.provider().getClass().getSimpleName() + ")");
      report.machine("database", PostgresSchema.version());
      for (int round = 1; round <= report.rounds(); round++) {
        System.out.printf("%nround %d%n", round);
        System.out.printf("%-36s %10s %12s%n", "peer", "seconds", "events/s");
        // Every peer once per round; which goes first turns from round to round.
        List<Peer> peers =
            List.of(
                () -> seconds(LOOP, perMessageLoop(kafka, broker)),
                () -> seconds(ONE_LANE, postbox(kafka, broker, 1)),
                () -> seconds(FOUR_LANES, postbox(kafka, broker, 4)),
                () -> deferred(report, DEFERRED_ONE, postboxDeferred(kafka, broker, 1)),
                () -> deferred(report, DEFERRED_FOUR, postboxDeferred(kafka, broker, 4)),
                () -> seconds(RAW, rawDatabase()));
        for (int k = 0; k < peers.size(); k++) {
          Peer.Run r = peers.get((k + round - 1) % peers.size()).run();
          System.out.printf("%-36s %10.2f %,12.0f%n", r.name(), r.seconds(), EVENTS / r.seconds());
          report.add(r.name(), THROUGHPUT, "events/s", EVENTS / r.seconds());
        }
        double loop = report.last(LOOP, THROUGHPUT);
        double raw = report.last(RAW, THROUGHPUT);
        for (String inline : List.of(ONE_LANE, FOUR_LANES)) {
          report.add(inline, X_LOOP, "x", report.last(inline, THROUGHPUT) / loop);
          report.add(inline, OF_RAW, "%", 100 * report.last(inline, THROUGHPUT) / raw);
        }
        double bestInline =
            Math.max(report.last(ONE_LANE, THROUGHPUT), report.last(FOUR_LANES, THROUGHPUT));
        double bestDeferred =
            Math.max(report.last(DEFERRED_ONE, THROUGHPUT), report.last(DEFERRED_FOUR, THROUGHPUT));
        report.add(DEFERRED, OF_INLINE, "%", 100 * bestDeferred / bestInline);
      }
      report.goal("inline, 1 lane >= 20x the seeds' loop", ONE_LANE, X_LOOP, ">=", 20);
      report.goal("inline, 1 lane >= 60 % of the raw database", ONE_LANE, OF_RAW, ">=", 60);
      report.goal("deferred >= 50 % of inline (best of each)", DEFERRED, OF_INLINE, ">=", 50);
      if (rest.contains("extras")) {
        storms(kafka, broker);
        scaleOut(kafka, broker);
      }
    }
    report.finish();
  }

  private static final String THROUGHPUT = "throughput";
  private static final String X_LOOP = "x loop";
  private static final String OF_RAW = "share of raw database";
  private static final String OF_INLINE = "share of inline";
  private static final String LOOP = "per-message loop (seeds)";
  private static final String ONE_LANE = "postbox inbox, inline, 1 lane";
  private static final String FOUR_LANES = "postbox inbox, inline, 4 lanes";
  private static final String DEFERRED_ONE = "postbox inbox, deferred, 1 worker";
  private static final String DEFERRED_FOUR = "postbox inbox, deferred, 4 workers";
  private static final String DEFERRED = "postbox inbox, deferred";
  private static final String RAW = "limit: raw database (no broker)";

  /** A peer of one round. */
  private interface Peer {
    record Run(String name, double seconds) {}

    Run run() throws Exception;
  }

  private static Peer.Run seconds(String name, double seconds) {
    return new Peer.Run(name, seconds);
  }

  private static Peer.Run deferred(Report report, String name, double[] handledAcked) {
    report.add(name, "all acked after", "s", handledAcked[1]);
    return new Peer.Run(name, handledAcked[0]);
  }

  private static void scaleOut(TestBroker kafka, Broker broker) throws Exception {
    System.out.printf(
        "%nscale-out: 1, 2 and 3 inbox instances (batch mode, 1 lane each), one consumer group, %,d"
            + " events over 8 partitions%n",
        SCALING_EVENTS);
    for (int instances = 1; instances <= 3; instances++) {
      double seconds = instances(kafka, broker, instances);
      System.out.printf(
          "%-36s %10.2f %,12.0f%n",
          instances + (instances == 1 ? " instance" : " instances"),
          seconds,
          SCALING_EVENTS / seconds);
    }
  }

  /**
   * {@code n} inbox instances, each with its own consumer in one group and its own lane, on one
   * database. They join first, on a trickle of warm-up events, until each has processed one (so no
   * rebalance falls inside the clock); then they stop polling, the measured events are published,
   * and the clock runs from their release to the last measured event's commit.
   */
  private static double instances(TestBroker kafka, Broker broker, int n) throws Exception {
    String topic = "inbox-scale-" + UUID.randomUUID();
    kafka.createDestination(topic, 8);
    try (PostgresSchema db = new PostgresSchema("")) {
      db.execute("CREATE TABLE charge (event_id VARCHAR(256) NOT NULL, amount INTEGER NOT NULL)");
      java.util.concurrent.atomic.AtomicInteger measured =
          new java.util.concurrent.atomic.AtomicInteger();
      java.util.concurrent.atomic.AtomicIntegerArray warm =
          new java.util.concurrent.atomic.AtomicIntegerArray(n);
      java.util.concurrent.atomic.AtomicBoolean pause =
          new java.util.concurrent.atomic.AtomicBoolean();
      java.util.concurrent.CyclicBarrier release = new java.util.concurrent.CyclicBarrier(n + 1);
      java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(n);
      List<Throwable> failures = java.util.Collections.synchronizedList(new ArrayList<>());
      ExecutorService threads = Executors.newFixedThreadPool(2 * n);
      List<Consumer> consumers = new ArrayList<>();
      try {
        for (int i = 0; i < n; i++) {
          int me = i;
          Consumer consumer = broker.subscribe(new Subscription(topic, "scale", 10_000));
          consumers.add(consumer);
          ExecutorService lane = Executors.newSingleThreadExecutor();
          InboxProcessor inbox =
              new InboxProcessor(
                  db.tx,
                  db.dialect,
                  InboxSettings.of("payments").withWorkers(1),
                  InboxBenchmark::charge,
                  Clock.systemUTC(),
                  new InboxListener() {
                    @Override
                    public void processed(String subscription, Envelope event) {
                      if (event.type().equals("Warmup")) {
                        warm.incrementAndGet(me);
                      } else {
                        measured.incrementAndGet();
                      }
                    }
                  },
                  lane);
          threads.submit(
              () -> {
                try {
                  while (!pause.get()) {
                    inbox.process(consumer.poll(500, Duration.ofMillis(50)));
                  }
                  release.await();
                  while (measured.get() < SCALING_EVENTS) {
                    inbox.process(consumer.poll(500, Duration.ofMillis(50)));
                  }
                } catch (Throwable t) {
                  failures.add(t);
                  release.reset();
                } finally {
                  lane.shutdown();
                  done.countDown();
                }
                return null;
              });
        }
        long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        for (int round = 0; !allWarm(warm); round++) {
          if (System.nanoTime() > deadline || !failures.isEmpty()) {
            throw new IllegalStateException("the instances never all joined: " + failures);
          }
          List<Envelope> trickle = new ArrayList<>();
          for (int k = 0; k < 64; k++) {
            trickle.add(event("Warmup", "warm-" + round + "-" + k, k));
          }
          broker.publisher().publishAll(topic, trickle);
          Thread.sleep(100); // pacing of the warm-up trickle, outside the clock
        }
        pause.set(true);
        List<Envelope> batch = new ArrayList<>();
        for (int i = 0; i < SCALING_EVENTS; i++) {
          batch.add(event("OrderCaptured", "order-" + (i % 1_000), i));
          if (batch.size() == 1_000) {
            broker.publisher().publishAll(topic, batch);
            batch.clear();
          }
        }
        release.await(2, java.util.concurrent.TimeUnit.MINUTES);
        long start = System.nanoTime();
        if (!done.await(5, java.util.concurrent.TimeUnit.MINUTES) || !failures.isEmpty()) {
          throw new IllegalStateException(
              measured.get() + " of " + SCALING_EVENTS + " processed; failures: " + failures);
        }
        return (System.nanoTime() - start) / 1e9;
      } finally {
        threads.shutdownNow();
        for (Consumer c : consumers) {
          c.close();
        }
      }
    }
  }

  private static boolean allWarm(java.util.concurrent.atomic.AtomicIntegerArray warm) {
    for (int i = 0; i < warm.length(); i++) {
      if (warm.get(i) == 0) {
        return false;
      }
    }
    return true;
  }

  private static Envelope event(String type, String key, int i) {
    return Envelope.builder()
        .source("urn:bench")
        .type(type)
        .key(key)
        .dataContentType("application/json")
        .payload("{\"order\":" + i + ",\"amount\":1999}")
        .build();
  }

  /** The seeds' loop: one transaction of four statements per message, then the ack. */
  private static double perMessageLoop(TestBroker kafka, Broker broker) throws Exception {
    String topic = publish(kafka, broker);
    try (PostgresSchema db = new PostgresSchema("")) {
      db.execute(
          "CREATE TABLE seed_inbox (event_id VARCHAR(256) PRIMARY KEY, status VARCHAR(16) NOT NULL)");
      db.execute("CREATE TABLE charge (event_id VARCHAR(256) NOT NULL, amount INTEGER NOT NULL)");
      try (Consumer consumer = broker.subscribe(new Subscription(topic, "loop", 10_000));
          Connection c = db.pool.getConnection()) {
        c.setAutoCommit(false);
        int done = 0;
        long start = System.nanoTime();
        while (done < EVENTS) {
          for (Delivery d : consumer.poll(500, Duration.ofMillis(100))) {
            String id = d.envelope().id();
            boolean seen;
            try (PreparedStatement ps =
                c.prepareStatement("SELECT 1 FROM seed_inbox WHERE event_id = ?")) {
              ps.setString(1, id);
              try (ResultSet rs = ps.executeQuery()) {
                seen = rs.next();
              }
            }
            if (!seen) {
              try (PreparedStatement ps =
                  c.prepareStatement(
                      "INSERT INTO seed_inbox (event_id, status) VALUES (?, 'received')")) {
                ps.setString(1, id);
                ps.executeUpdate();
              }
              charge(c, d.envelope());
              try (PreparedStatement ps =
                  c.prepareStatement(
                      "UPDATE seed_inbox SET status = 'processed' WHERE event_id = ?")) {
                ps.setString(1, id);
                ps.executeUpdate();
              }
            }
            c.commit();
            d.ack();
            done++;
          }
        }
        return (System.nanoTime() - start) / 1e9;
      }
    }
  }

  private static double postbox(TestBroker kafka, Broker broker, int lanes) throws Exception {
    String topic = publish(kafka, broker);
    try (PostgresSchema db = new PostgresSchema("")) {
      db.execute("CREATE TABLE charge (event_id VARCHAR(256) NOT NULL, amount INTEGER NOT NULL)");
      ExecutorService pool = Executors.newFixedThreadPool(lanes);
      java.util.concurrent.atomic.AtomicInteger processed =
          new java.util.concurrent.atomic.AtomicInteger();
      InboxHandler handler = InboxBenchmark::charge;
      InboxProcessor inbox =
          new InboxProcessor(
              db.tx,
              db.dialect,
              InboxSettings.of("payments").withWorkers(lanes),
              handler,
              Clock.systemUTC(),
              new InboxListener() {
                @Override
                public void processed(String subscription, Envelope event) {
                  processed.incrementAndGet();
                }
              },
              pool);
      try (Consumer consumer = broker.subscribe(new Subscription(topic, "postbox", 10_000))) {
        long start = System.nanoTime();
        while (processed.get() < EVENTS) {
          inbox.process(consumer.poll(500, Duration.ofMillis(100)));
        }
        return (System.nanoTime() - start) / 1e9;
      } finally {
        pool.shutdown();
      }
    }
  }

  /** The duplicate storm with and without the front, alone with {@code storm} as the argument. */
  private static void storms(TestBroker kafka, Broker broker) throws Exception {
    System.out.printf(
        "%nduplicate storm: %,d already-processed events redelivered (a new consumer group reads"
            + " the topic again), batch mode, 1 lane%n",
        EVENTS);
    double[] withoutFront = storm(kafka, broker, false);
    double[] withFront = storm(kafka, broker, true);
    double ceiling = Math.min(withoutFront[1], withFront[1]);
    System.out.printf(
        "%-36s %10s %12s %8s %14s%n", "peer", "seconds", "copies/s", "x", "s above Kafka");
    System.out.printf(
        "%-36s %10.3f %,12.0f %8s %14s%n",
        "Kafka alone (poll + ack)", ceiling, EVENTS / ceiling, "", "");
    System.out.printf(
        "%-36s %10.3f %,12.0f %8s %14.3f%n",
        "inbox without the front",
        withoutFront[0],
        EVENTS / withoutFront[0],
        "1.0x",
        withoutFront[0] - ceiling);
    System.out.printf(
        "%-36s %10.3f %,12.0f %7.1fx %14.3f%n",
        "inbox with the front",
        withFront[0],
        EVENTS / withFront[0],
        withoutFront[0] / withFront[0],
        withFront[0] - ceiling);
  }

  /**
   * A duplicate storm: the events are processed once (not timed), then every one of them comes back
   * (a new consumer group reads the topic from the start, as after a reset of its offsets), and the
   * clock runs from the storm's first delivered batch until the inbox has acknowledged the last
   * copy as a duplicate. With the front, a copy is counted (one statement per poll batch) and acked
   * without its own round trip; without it, each poll batch tries its inbox rows and finds them
   * taken.
   *
   * <p>The peer "Kafka alone" reads the same copies with a third group and only acknowledges them:
   * the consumer's own time, which neither inbox can go below.
   *
   * @return the storm's seconds, and Kafka alone's
   */
  private static double[] storm(TestBroker kafka, Broker broker, boolean front) throws Exception {
    String topic = publish(kafka, broker);
    try (PostgresSchema db = new PostgresSchema("")) {
      db.execute("CREATE TABLE charge (event_id VARCHAR(256) NOT NULL, amount INTEGER NOT NULL)");
      java.util.concurrent.atomic.AtomicInteger processed =
          new java.util.concurrent.atomic.AtomicInteger();
      java.util.concurrent.atomic.AtomicInteger duplicates =
          new java.util.concurrent.atomic.AtomicInteger();
      InboxSettings settings = InboxSettings.of("payments");
      InboxProcessor inbox =
          new InboxProcessor(
              db.tx,
              db.dialect,
              // the runtime's defaults (postbox.inbox.front.*): 100,000 ids, 10 minutes
              front ? settings.withFront(Duration.ofMinutes(10), 100_000) : settings.withoutFront(),
              InboxBenchmark::charge,
              Clock.systemUTC(),
              new InboxListener() {
                @Override
                public void processed(String subscription, Envelope event) {
                  processed.incrementAndGet();
                }

                @Override
                public void duplicate(String subscription, Envelope event) {
                  duplicates.incrementAndGet();
                }
              },
              null);
      long deadline = System.nanoTime() + Duration.ofMinutes(5).toNanos();
      try (Consumer first = broker.subscribe(new Subscription(topic, "first", 10_000))) {
        while (processed.get() < EVENTS) {
          requireBefore(deadline, processed.get() + " of " + EVENTS + " processed");
          inbox.process(first.poll(500, Duration.ofMillis(100)));
        }
      }
      try (Consumer storm = broker.subscribe(new Subscription(topic, "storm", 10_000))) {
        // The clock starts at the storm's first batch: joining the new group is the broker's
        // time, the same with or without the front, and not what is measured.
        List<Delivery> batch = firstBatch(storm, deadline);
        long start = System.nanoTime();
        inbox.process(batch);
        while (duplicates.get() < EVENTS) {
          requireBefore(deadline, duplicates.get() + " of " + EVENTS + " copies counted");
          inbox.process(storm.poll(500, Duration.ofMillis(100)));
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        if (front != (inbox.front() != null)) {
          throw new IllegalStateException("the front is " + (front ? "off" : "on") + " here");
        }
        if (processed.get() != EVENTS) {
          throw new IllegalStateException(
              "a copy was processed again: " + processed.get() + " processed");
        }
        return new double[] {seconds, kafkaAlone(broker, topic, deadline)};
      }
    }
  }

  /** Reads the topic with a new group and acknowledges every delivery, nothing else. */
  private static double kafkaAlone(Broker broker, String topic, long deadline) {
    try (Consumer alone = broker.subscribe(new Subscription(topic, "alone", 10_000))) {
      List<Delivery> batch = firstBatch(alone, deadline);
      long start = System.nanoTime();
      int acked = 0;
      while (true) {
        for (Delivery d : batch) {
          d.ack();
        }
        acked += batch.size();
        if (acked >= EVENTS) {
          return (System.nanoTime() - start) / 1e9;
        }
        requireBefore(deadline, acked + " of " + EVENTS + " acknowledged");
        batch = alone.poll(500, Duration.ofMillis(100));
      }
    }
  }

  /** Polls a newly joined consumer until its first deliveries come (the join is not measured). */
  private static List<Delivery> firstBatch(Consumer consumer, long deadline) {
    List<Delivery> batch = consumer.poll(500, Duration.ofMillis(100));
    while (batch.isEmpty()) {
      requireBefore(deadline, "a new group never received a batch");
      batch = consumer.poll(500, Duration.ofMillis(100));
    }
    return batch;
  }

  private static void requireBefore(long deadlineNanos, String progress) {
    if (System.nanoTime() > deadlineNanos) {
      throw new IllegalStateException("no progress within five minutes: " + progress);
    }
  }

  /**
   * Deferred mode: the receiver records, queues, commits and acks; the workers run the handler.
   *
   * @return seconds until the last handler committed, and until the last delivery was acked
   */
  private static double[] postboxDeferred(TestBroker kafka, Broker broker, int workers)
      throws Exception {
    String topic = publish(kafka, broker);
    try (PostgresSchema db = new PostgresSchema("")) {
      db.execute("CREATE TABLE charge (event_id VARCHAR(256) NOT NULL, amount INTEGER NOT NULL)");
      InboxSettings settings = InboxSettings.of("payments").withDeferred(true).withWorkers(workers);
      java.util.concurrent.CountDownLatch handled = new java.util.concurrent.CountDownLatch(EVENTS);
      DeferredInbox deferred =
          new DeferredInbox(
              db.tx,
              db.dialect,
              settings,
              InboxBenchmark::charge,
              Clock.systemUTC(),
              new InboxListener() {
                @Override
                public void processed(String subscription, Envelope event) {
                  handled.countDown();
                }
              });
      java.util.concurrent.atomic.AtomicInteger received =
          new java.util.concurrent.atomic.AtomicInteger();
      InboxProcessor receiver =
          new InboxProcessor(
              db.tx,
              db.dialect,
              settings,
              InboxBenchmark::charge,
              Clock.systemUTC(),
              new InboxListener() {
                @Override
                public void received(String subscription, Envelope event) {
                  received.incrementAndGet();
                  deferred.wake();
                }
              },
              null);
      ExecutorService workerThreads = Executors.newFixedThreadPool(workers);
      try (Consumer consumer = broker.subscribe(new Subscription(topic, "postbox", 10_000))) {
        long start = System.nanoTime();
        deferred.start(workerThreads);
        while (received.get() < EVENTS) {
          receiver.process(consumer.poll(500, Duration.ofMillis(100)));
        }
        double acked = (System.nanoTime() - start) / 1e9;
        if (!handled.await(5, java.util.concurrent.TimeUnit.MINUTES)) {
          throw new IllegalStateException(handled.getCount() + " events never handled");
        }
        return new double[] {(System.nanoTime() - start) / 1e9, acked};
      } finally {
        deferred.close();
        workerThreads.shutdown();
      }
    }
  }

  /**
   * The database's limit for the same work, without a broker: the same events' inbox rows (already
   * processed) and business rows, 500 per transaction as a poll batch, each table written with one
   * multi-row statement over plain JDBC, on one connection.
   */
  private static double rawDatabase() throws Exception {
    List<Envelope> events = new ArrayList<>();
    for (int i = 0; i < EVENTS; i++) {
      events.add(event("OrderCaptured", "order-" + (i % 1_000), i));
    }
    try (PostgresSchema db = new PostgresSchema("")) {
      db.execute("CREATE TABLE charge (event_id VARCHAR(256) NOT NULL, amount INTEGER NOT NULL)");
      java.security.MessageDigest sha = java.security.MessageDigest.getInstance("SHA-256");
      try (Connection c = db.pool.getConnection()) {
        c.setAutoCommit(false);
        long start = System.nanoTime();
        for (int from = 0; from < EVENTS; from += 500) {
          List<Envelope> batch = events.subList(from, Math.min(EVENTS, from + 500));
          StringBuilder inbox =
              new StringBuilder(
                  "INSERT INTO postbox_inbox (subscription, event_id, event_key, event_type,"
                      + " fingerprint, status, received_at, processed_at) VALUES ");
          StringBuilder charges =
              new StringBuilder("INSERT INTO charge (event_id, amount) VALUES ");
          for (int i = 0; i < batch.size(); i++) {
            inbox.append(i == 0 ? "" : ",").append("(?,?,?,?,?,'PROCESSED',now(),now())");
            charges.append(i == 0 ? "" : ",").append("(?,1999)");
          }
          inbox.append(" ON CONFLICT (subscription, event_id) DO NOTHING");
          try (PreparedStatement ps = c.prepareStatement(inbox.toString());
              PreparedStatement cs = c.prepareStatement(charges.toString())) {
            int p = 1;
            int q = 1;
            for (Envelope e : batch) {
              ps.setString(p++, "payments");
              ps.setString(p++, e.id());
              ps.setString(p++, e.key());
              ps.setString(p++, e.type());
              ps.setString(p++, java.util.HexFormat.of().formatHex(sha.digest(e.payload())));
              cs.setString(q++, e.id());
            }
            ps.executeUpdate();
            cs.executeUpdate();
          }
          c.commit();
        }
        return (System.nanoTime() - start) / 1e9;
      }
    }
  }

  private static void charge(Connection c, Envelope e) throws java.sql.SQLException {
    try (PreparedStatement ps =
        c.prepareStatement("INSERT INTO charge (event_id, amount) VALUES (?, ?)")) {
      ps.setString(1, e.id());
      ps.setInt(2, 1999);
      ps.executeUpdate();
    }
  }

  /** A new topic holding EVENTS events over 1,000 keys. */
  private static String publish(TestBroker kafka, Broker broker) {
    String topic = "inbox-bench-" + UUID.randomUUID();
    kafka.createDestination(topic, 8);
    List<Envelope> batch = new ArrayList<>();
    for (int i = 0; i < EVENTS; i++) {
      batch.add(event("OrderCaptured", "order-" + (i % 1_000), i));
      if (batch.size() == 1_000) {
        broker.publisher().publishAll(topic, batch);
        batch.clear();
      }
    }
    return topic;
  }
}
