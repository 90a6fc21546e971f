package dev.postbox.runtime.inbox;

import dev.postbox.benchmarks.PostgresSchema;
import dev.postbox.benchmarks.Report;
import dev.postbox.runtime.db.Migrations;
import dev.postbox.runtime.retention.DatePartitions;
import dev.postbox.runtime.retention.Retention;
import dev.postbox.spi.Envelope;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Retention at volume (issue #20 part 4), on the local PostgreSQL: an inbox holding {@code --rows}
 * (10,000,000 by default) processed rows past the dedup window, cleared by each peer while the
 * inbox keeps recording new events:
 *
 * <ul>
 *   <li><b>delete:</b> the plain inbox and {@link dev.postbox.runtime.retention.Retention}'s
 *       batched DELETEs (1,000 rows a transaction, the default);
 *   <li><b>drop:</b> the date-partitioned inbox ({@code postbox.date-partitions=true}), the old
 *       rows in a past bucket, and {@link DatePartitions#maintain}'s DROP of that bucket.
 * </ul>
 *
 * Each reports the time the retention took, the inbox's size (table and indexes, every partition)
 * before and after, and the inbox's throughput while it ran against the same load without it (the
 * {@code idle} figure, measured first, for {@code --idle-seconds}). The load is the inbox's own
 * recording path ({@code InboxRepository.recordAll}, 100 new events a transaction) with a business
 * row per event, on 2 connections. {@code --rounds} defaults to 1 here: a round seeds 20M rows.
 *
 * <pre>
 * ./mvnw -q -B -pl benchmarks exec:java -Dexec.mainClass=dev.postbox.runtime.inbox.RetentionBenchmark
 * </pre>
 */
public final class RetentionBenchmark {

  private static final String SUB = "bench";
  private static final int BATCH = 100;
  private static final int LOADERS = 2;

  public static void main(String[] args) throws Exception {
    List<String> all = new ArrayList<>(List.of(args));
    if (!all.contains("--rounds")) {
      all.add("--rounds");
      all.add("1");
    }
    Report report = Report.of("retention", all.toArray(String[]::new));
    long rows = 10_000_000;
    int idleSeconds = 10;
    for (int i = 0; i < report.args().size(); i++) {
      switch (report.args().get(i)) {
        case "--rows" -> rows = Long.parseLong(report.args().get(++i));
        case "--idle-seconds" -> idleSeconds = Integer.parseInt(report.args().get(++i));
        default -> throw new IllegalArgumentException("unknown option " + report.args().get(i));
      }
    }
    report.machine("database", PostgresSchema.version());
    report.machine("rows", rows);
    for (int round = 1; round <= report.rounds(); round++) {
      for (boolean partitioned : new boolean[] {false, true}) {
        run(report, partitioned, rows, idleSeconds);
      }
    }
    report.finish();
  }

  private static void run(Report report, boolean partitioned, long rows, int idleSeconds)
      throws Exception {
    String peer = partitioned ? "drop" : "delete";
    try (PostgresSchema db = new PostgresSchema("")) {
      if (partitioned) {
        Migrations.partitionByDate(db.pool);
      }
      db.execute("CREATE TABLE bench_effect (event_id VARCHAR(256) NOT NULL, note VARCHAR(64))");
      long seedStart = System.nanoTime();
      seed(db, rows);
      // The old rows' bucket is left behind: the next bucket opens, as a day later.
      DatePartitions buckets =
          new DatePartitions(
              db.tx,
              Clock.offset(Clock.systemUTC(), Duration.ofDays(1)),
              DatePartitions.Table.INBOX);
      // (a retention of ten years here: this run must not drop the old bucket yet)
      if (partitioned && !buckets.maintain(Duration.ofDays(3650)).switched()) {
        throw new IllegalStateException("the bucket did not move on");
      }
      analyze(db);
      System.out.printf(
          "%s: seeded %,d rows in %.0f s, %.0f MB%n",
          peer, rows, (System.nanoTime() - seedStart) / 1e9, size(db) / 1e6);
      report.add(peer, "size before", "MB", size(db) / 1e6);

      Load load = new Load(db, new InboxRepository(db.dialect));
      try {
        long idleFrom = load.events.get();
        long idleStart = System.nanoTime();
        Thread.sleep(idleSeconds * 1000L); // a fixed measuring window, not a wait for async work
        double idleRate = (load.events.get() - idleFrom) / ((System.nanoTime() - idleStart) / 1e9);

        long from = load.events.get();
        long start = System.nanoTime();
        if (partitioned) {
          DatePartitions.Run r =
              new DatePartitions(db.tx, Clock.systemUTC(), DatePartitions.Table.INBOX)
                  .maintain(Retention.DEFAULT_DEDUP_WINDOW);
          if (r.dropped().isEmpty()) {
            throw new IllegalStateException("nothing dropped: " + r);
          }
        } else {
          int deleted =
              Retention.inbox(db.tx, db.dialect, Clock.systemUTC())
                  .purge(Retention.DEFAULT_DEDUP_WINDOW, 1_000);
          if (deleted < rows) {
            throw new IllegalStateException("deleted " + deleted + " of " + rows);
          }
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        // at least the idle window, so a quick drop is measured over as long as the load ran idle
        while ((System.nanoTime() - start) / 1e9 < idleSeconds) {
          Thread.sleep(100);
        }
        double during = (load.events.get() - from) / ((System.nanoTime() - start) / 1e9);
        report.add(peer, "retention time", "s", seconds);
        report.add(peer, "inbox idle", "events/s", idleRate);
        report.add(peer, "inbox during", "events/s", during);
        report.add(peer, "inbox during / idle", "%", 100 * during / idleRate);
      } finally {
        load.close();
      }
      report.add(peer, "size after", "MB", size(db) / 1e6);
      long left =
          db.tx.inTransaction(
              c -> {
                try (Statement s = c.createStatement();
                    ResultSet rs =
                        s.executeQuery(
                            "SELECT COUNT(*) FROM postbox_inbox WHERE event_id LIKE 'old-%'")) {
                  rs.next();
                  return rs.getLong(1);
                }
              });
      if (left != 0) {
        throw new IllegalStateException(peer + " left " + left + " old rows");
      }
      System.out.printf(
          "%s: retention %.1f s; inbox %,.0f events/s idle, %,.0f during%n",
          peer,
          report.last(peer, "retention time"),
          report.last(peer, "inbox idle"),
          report.last(peer, "inbox during"));
    }
  }

  /** Processed rows received 30 days ago, past the 15-day window; in bucket 1 if partitioned. */
  private static void seed(PostgresSchema db, long rows) {
    db.tx.inTransaction(
        c -> {
          try (PreparedStatement ps =
              c.prepareStatement(
                  "INSERT INTO postbox_inbox (subscription, event_id, event_type, fingerprint,"
                      + " status, received_at, processed_at) SELECT ?, 'old-' || g, 'OrderPlaced',"
                      + " md5(g::text) || md5(g::text), 'PROCESSED', now() - interval '30 days',"
                      + " now() - interval '30 days' FROM generate_series(1, ?) g")) {
            ps.setString(1, SUB);
            ps.setLong(2, rows);
            return ps.executeUpdate();
          }
        });
  }

  private static void analyze(PostgresSchema db) {
    db.tx.inTransaction(
        c -> {
          try (Statement s = c.createStatement()) {
            s.execute("ANALYZE postbox_inbox");
          }
          return null;
        });
  }

  /** The inbox's bytes: every partition's table, indexes and TOAST. */
  private static long size(PostgresSchema db) {
    return db.tx.inTransaction(
        c -> {
          try (Statement s = c.createStatement();
              ResultSet rs =
                  s.executeQuery(
                      // a plain table has no partition tree: its own size then
                      "SELECT COALESCE((SELECT SUM(pg_total_relation_size(relid))"
                          + " FROM pg_partition_tree('postbox_inbox') WHERE isleaf),"
                          + " pg_total_relation_size('postbox_inbox'))")) {
            rs.next();
            return rs.getLong(1);
          }
        });
  }

  /** The inbox recording new events without pause, on {@link #LOADERS} threads. */
  private static final class Load implements AutoCloseable {
    final AtomicLong events = new AtomicLong();
    private final AtomicBoolean stop = new AtomicBoolean();
    private final List<Thread> threads = new ArrayList<>();
    private final AtomicLong next = new AtomicLong();

    Load(PostgresSchema db, InboxRepository repo) {
      byte[] payload = "{\"orderId\":1}".getBytes(StandardCharsets.UTF_8);
      List<String> fingerprints =
          Collections.nCopies(BATCH, dev.postbox.runtime.common.Fingerprint.of(payload));
      for (int t = 0; t < LOADERS; t++) {
        Thread thread =
            new Thread(
                () -> {
                  while (!stop.get()) {
                    List<Envelope> batch = new ArrayList<>(BATCH);
                    for (int i = 0; i < BATCH; i++) {
                      batch.add(
                          Envelope.builder()
                              .id("new-" + next.incrementAndGet())
                              .source("urn:bench")
                              .type("OrderPlaced")
                              .payload(payload)
                              .build());
                    }
                    db.tx.inTransaction(
                        c -> {
                          repo.recordAll(c, SUB, batch, fingerprints, true, Instant.now());
                          effects(c, batch);
                          return null;
                        });
                    events.addAndGet(BATCH);
                  }
                },
                "inbox-load-" + t);
        thread.setDaemon(true);
        thread.start();
        threads.add(thread);
      }
    }

    private static void effects(Connection c, List<Envelope> batch) throws java.sql.SQLException {
      try (PreparedStatement ps =
          c.prepareStatement("INSERT INTO bench_effect (event_id, note) VALUES (?, 'charged')")) {
        for (Envelope e : batch) {
          ps.setString(1, e.id());
          ps.addBatch();
        }
        ps.executeBatch();
      }
    }

    @Override
    public void close() throws InterruptedException {
      stop.set(true);
      for (Thread t : threads) {
        t.join();
      }
    }
  }
}
