package dev.postbox.runtime.relay;

import dev.postbox.runtime.db.Dialect;
import java.lang.System.Logger.Level;
import java.lang.reflect.Method;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Collection;
import java.util.Iterator;
import java.util.Set;
import java.util.StringJoiner;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadFactory;
import java.util.function.IntConsumer;
import javax.sql.DataSource;

/**
 * Wake-up across instances on PostgreSQL. Each instance holds one connection that {@code LISTEN}s
 * on {@link Dialect#OUTBOX_CHANNEL}. After a business transaction that wrote outbox rows has
 * committed, the instance {@linkplain #announce announces} the partitions it does not hold itself;
 * this listener's thread sends them on its own connection, in a statement of its own ({@code SELECT
 * pg_notify(...)}, autocommit), and every instance that holds one of them publishes at once instead
 * of at its next poll. Other instances ignore it ({@link Relay#wake} does nothing for a partition
 * it does not hold).
 *
 * <p>Nothing is sent inside the business transaction: a {@code NOTIFY} there would make its commit
 * take PostgreSQL's database-wide notification lock, and would make two-phase commit impossible
 * ({@code PREPARE TRANSACTION} refuses it).
 *
 * <p>Best effort by design: polling stays the safety net. If the connection breaks (a failed send,
 * or a failed check after 30 s without traffic), the listener reconnects after a second;
 * announcements lost meanwhile cost their rows a poll interval. The driver's {@code PGConnection}
 * is reached by reflection through {@link Connection#unwrap}, so the runtime needs no compile-time
 * PostgreSQL dependency; in an application server the driver's classes must be visible to the
 * application (Liberty: {@code <classloader commonLibraryRef="..."/>} on the application, naming
 * the JDBC library). Where they are not, the listener says so once and stops, and from then on
 * announcements are dropped at once ({@link #listening()} tells, and a metric with it).
 *
 * <p>What waits to be sent is a set of partition numbers, not a queue of announcements: however
 * long the connection is down, it holds each partition at most once.
 */
final class OutboxNotifications implements AutoCloseable {

  private static final System.Logger LOG = System.getLogger(OutboxNotifications.class.getName());

  /** How long one wait for notifications lasts: also the longest an announcement waits to go. */
  private static final int WAIT_MILLIS = 20;

  private static final long CHECK_AFTER_NANOS = 30_000_000_000L;

  private final DataSource dataSource;
  private final IntConsumer wake;
  private final java.util.function.Consumer<java.time.Instant> due;

  /** The earliest due time of scheduled rows committed here, not yet announced (epoch millis). */
  private final java.util.concurrent.atomic.AtomicLong dueOutgoing =
      new java.util.concurrent.atomic.AtomicLong(Long.MAX_VALUE);

  private final Thread thread;
  private final Set<Integer> outgoing = ConcurrentHashMap.newKeySet();
  private volatile boolean stopped;
  private volatile boolean off;
  private volatile boolean listening;

  /**
   * @param wake called with each announced partition (on the listener's thread; keep it cheap)
   * @param threads makes the listener's one thread (an application server's managed factory)
   */
  public OutboxNotifications(DataSource dataSource, IntConsumer wake, ThreadFactory threads) {
    this(dataSource, wake, t -> {}, threads);
  }

  /**
   * @param due called with each announced due time of scheduled rows (the relay arms its due timer)
   */
  public OutboxNotifications(
      DataSource dataSource,
      IntConsumer wake,
      java.util.function.Consumer<java.time.Instant> due,
      ThreadFactory threads) {
    this.due = due;
    this.dataSource = dataSource;
    this.wake = wake;
    this.thread = threads.newThread(this::run);
    this.thread.setName("postbox-outbox-listener");
    this.thread.setDaemon(true);
  }

  /** Starts listening; returns at once. */
  public void start() {
    thread.start();
  }

  /**
   * Announces partitions whose rows a transaction has just committed (call after the commit). Cheap
   * and non-blocking: the listener's thread sends them within {@value #WAIT_MILLIS} ms.
   */
  public void announce(Collection<Integer> partitions) {
    if (!stopped && !off) {
      outgoing.addAll(partitions);
    }
  }

  /**
   * Announces the due time of scheduled rows a transaction has just committed (call after the
   * commit), so the instance that holds their partition arms its due timer instead of learning of
   * them at its next poll. A payload of its own ("d" and epoch millis), which instances of earlier
   * versions ignore.
   */
  public void announceDue(java.time.Instant at) {
    if (!stopped && !off) {
      dueOutgoing.accumulateAndGet(at.toEpochMilli(), Math::min);
    }
  }

  /** Whether the listener is connected and listening now (false while it reconnects, or off). */
  public boolean listening() {
    return listening;
  }

  /** Partitions waiting to be announced; at most one entry each. */
  int waiting() {
    return outgoing.size();
  }

  private void run() {
    boolean warned = false;
    while (!stopped) {
      try (Connection c = dataSource.getConnection()) {
        c.setAutoCommit(true);
        Class<?> pgConnection = pgConnectionClass(c);
        Object pg;
        try {
          pg = c.unwrap(pgConnection);
        } catch (SQLException notThisDriver) {
          off(
              "the data source's connection is not the PostgreSQL driver's ("
                  + notThisDriver
                  + ")");
          return;
        }
        Method poll = pgConnection.getMethod("getNotifications", int.class);
        ChannelRepository.listen(c);
        LOG.log(
            Level.INFO,
            "outbox wake-up across instances: listening on "
                + Dialect.OUTBOX_CHANNEL
                + (warned ? " again" : ""));
        warned = false;
        listening = true;
        try {
          listen(c, pg, poll);
        } finally {
          listening = false;
          try {
            ChannelRepository.unlisten(c); // the connection goes back to a pool
          } catch (SQLException broken) {
            // the pool discards a broken connection
          }
        }
      } catch (ClassNotFoundException | NoSuchMethodException | LinkageError notPostgres) {
        off(
            "the PostgreSQL driver's PGConnection is not visible to the application ("
                + notPostgres
                + ")");
        return;
      } catch (Exception e) {
        if (stopped) {
          return;
        }
        if (!warned) {
          LOG.log(
              Level.WARNING,
              "outbox wake-up across instances: listening failed, retrying every second (rows"
                  + " committed meanwhile wait for the poll interval): "
                  + e);
          warned = true;
        }
        try {
          Thread.sleep(1_000); // a reconnect back-off
        } catch (InterruptedException interrupted) {
          return;
        }
      }
    }
  }

  private void listen(Connection c, Object pg, Method poll) throws Exception {
    long quietSince = System.nanoTime();
    try (PreparedStatement send = ChannelRepository.notifier(c);
        PreparedStatement check = ChannelRepository.aliveCheck(c)) {
      while (!stopped) {
        String payload = drain();
        if (payload != null) {
          send.setString(1, payload);
          send.executeQuery().close();
          quietSince = System.nanoTime();
        }
        long dueAt = dueOutgoing.getAndSet(Long.MAX_VALUE);
        if (dueAt != Long.MAX_VALUE) {
          send.setString(1, "d" + dueAt);
          send.executeQuery().close();
          quietSince = System.nanoTime();
        }
        Object[] notifications = (Object[]) poll.invoke(pg, WAIT_MILLIS);
        if (notifications != null && notifications.length > 0) {
          quietSince = System.nanoTime();
          for (Object n : notifications) {
            deliver(n);
          }
        } else if (System.nanoTime() - quietSince > CHECK_AFTER_NANOS) {
          // getNotifications only reads: a connection dropped by the network would stay silent
          check.executeQuery().close();
          quietSince = System.nanoTime();
        }
      }
    }
  }

  /** The queued partitions as one payload ("3,17,40"), or null if none are queued. */
  private String drain() {
    TreeSet<Integer> partitions = new TreeSet<>();
    for (Iterator<Integer> i = outgoing.iterator(); i.hasNext() && partitions.size() < 1_000; ) {
      partitions.add(i.next());
      i.remove();
    }
    if (partitions.isEmpty()) {
      return null;
    }
    StringJoiner payload = new StringJoiner(",");
    partitions.forEach(p -> payload.add(Integer.toString(p)));
    return payload.toString();
  }

  private void off(String why) {
    off = true;
    outgoing.clear();
    LOG.log(
        Level.WARNING,
        "outbox wake-up across instances is off: "
            + why
            + "; commits on other instances are published at the holder's next poll");
  }

  private static Class<?> pgConnectionClass(Connection c) throws ClassNotFoundException {
    ClassLoader context = Thread.currentThread().getContextClassLoader();
    if (context != null) {
      try {
        return Class.forName("org.postgresql.PGConnection", false, context);
      } catch (ClassNotFoundException tryTheConnections) {
        // below
      }
    }
    return Class.forName("org.postgresql.PGConnection", false, c.getClass().getClassLoader());
  }

  private void deliver(Object notification) {
    try {
      String payload =
          (String) notification.getClass().getMethod("getParameter").invoke(notification);
      if (payload.startsWith("d")) {
        due.accept(java.time.Instant.ofEpochMilli(Long.parseLong(payload.substring(1))));
        return;
      }
      for (String p : payload.split(",")) {
        wake.accept(Integer.parseInt(p.trim()));
      }
    } catch (ReflectiveOperationException | RuntimeException ignored) {
      // not ours, or malformed: the poll finds whatever it was about
    }
  }

  /** Stops listening; waits at most a second for the thread, which returns its connection. */
  @Override
  public void close() {
    stopped = true;
    thread.interrupt();
    try {
      thread.join(1_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
