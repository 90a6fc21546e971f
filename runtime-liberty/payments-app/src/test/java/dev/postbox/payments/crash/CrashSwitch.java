package dev.postbox.payments.crash;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/** The armed state of crash points under one directory (see {@link CrashPoints}). */
final class CrashSwitch {

  private static final long REREAD_NANOS = 50_000_000L;

  private final Object lock = new Object();
  private volatile String armedLine = "";
  private volatile String armedPoint = "";
  private volatile boolean armedToFail;
  private volatile boolean armedToHold;
  private volatile int armedTimes;
  private volatile long readAt = System.nanoTime() - REREAD_NANOS;
  private final AtomicInteger remaining = new AtomicInteger();

  private final Path directory;

  private CrashSwitch(Path directory) {
    this.directory = directory;
  }

  /** The switch for a directory, or null (off) when none is given. */
  static CrashSwitch from(String directory) {
    return directory == null || directory.isBlank() ? null : new CrashSwitch(Path.of(directory));
  }

  /** See {@link CrashPoints#reach}. */
  void reach(String point) {
    refresh();
    if (!point.equals(armedPoint)) {
      return;
    }
    int left = remaining.getAndDecrement();
    if (left <= 0) {
      return;
    }
    if (left == armedTimes) {
      write(directory.resolve("reached"), point + " " + Thread.currentThread().getName());
    }
    if (armedToFail) {
      throw new IllegalStateException("crash point " + point + " armed to fail");
    }
    if (armedToHold) {
      // held until the line is taken back: the test pauses the process meanwhile (SIGSTOP)
      String held = armedLine;
      while (held.equals(armedLine)) {
        LockSupport.parkNanos(REREAD_NANOS);
        readAt = System.nanoTime() - REREAD_NANOS;
        refresh();
      }
      return;
    }
    while (true) {
      LockSupport.park(); // until the test's SIGKILL
    }
  }

  /**
   * Re-reads the armed file at most every 50 ms: {@code "<point> park"}, {@code "<point> hold"} or
   * {@code "<point> fail [times]"}. A changed line re-arms; a missing one disarms (and lets a held
   * thread go on).
   */
  private void refresh() {
    long now = System.nanoTime();
    if (now - readAt < REREAD_NANOS) {
      return;
    }
    synchronized (lock) {
      if (now - readAt < REREAD_NANOS) {
        return;
      }
      readAt = now;
      String line = read(directory.resolve("armed")).trim();
      if (line.equals(armedLine)) {
        return;
      }
      armedLine = line;
      String[] armed = line.split("\\s+");
      armedPoint = ""; // disarmed while the fields change
      armedToFail = armed.length > 1 && armed[1].equals("fail");
      armedToHold = armed.length > 1 && armed[1].equals("hold");
      armedTimes = armedToFail && armed.length > 2 ? Integer.parseInt(armed[2]) : 1;
      remaining.set(armedTimes);
      armedPoint = armed.length > 1 ? armed[0] : "";
      System.getLogger(CrashSwitch.class.getName())
          .log(
              System.Logger.Level.INFO,
              "crash point "
                  + (line.isEmpty() ? "disarmed" : "armed: " + line)
                  + " in "
                  + directory);
    }
  }

  private static String read(Path file) {
    try {
      return Files.readString(file, StandardCharsets.UTF_8);
    } catch (NoSuchFileException notArmed) {
      return "";
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static void write(Path file, String text) {
    try {
      Path partial = file.resolveSibling(file.getFileName() + ".partial");
      Files.writeString(partial, text, StandardCharsets.UTF_8);
      // The test polls for the file: it must never see it half-written.
      Files.move(partial, file, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
