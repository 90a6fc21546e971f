package dev.postbox.payments;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A second Liberty server running the payments app on another broker, as a user would deploy it:
 * the built WAR with an adapter's jars added to WEB-INF/lib (what {@code -Pkafka} or {@code -Psqs}
 * puts there), the app's own server.xml, and the broker settings as server variables.
 *
 * <p>Why a launcher of our own and not Arquillian, as the runtime's in-container tests use: the
 * crash harness SIGKILLs a server in the middle of a request or a batch, SIGSTOPs a lease holder
 * and restarts servers on the same data, with two servers side by side. Arquillian's managed
 * container stops a server only gracefully ({@code ContainerController.kill()} is a clean stop) and
 * runs one at a time. The other payments ITs that use it deploy the whole app with its own
 * server.xml, as an operator would, not a micro-deployment.
 */
final class VariantServer implements AutoCloseable {

  /**
   * The test servers' JVM: the client compiler only and the serial collector. On two cores a
   * server's start is mostly JIT and GC threads competing with the one that loads the app: these
   * took a start from 12.1 s to 8.1 s here (a clean start from 18.7 s to 12.7 s), and the payments
   * ITs start a server about fifty times a CI run. What they prove (loss, doubles, order, fencing)
   * does not depend on the JIT; no benchmark runs on these servers.
   */
  static final String JVM_OPTIONS = "-XX:TieredStopAtLevel=1\n-XX:+UseSerialGC\n";

  private final Path wlp = Path.of(System.getProperty("liberty.wlp"));
  private final String name;
  private final Path dir;
  private final int port = freePort();

  /**
   * @param adapter the adapter's name: the folder under target/adapters whose jars join the WAR
   *     (the payments pom copies each adapter's there), or none for one the WAR as built holds
   * @param variables server variables, e.g. postbox.broker=kafka and its settings
   */
  VariantServer(String adapter, Map<String, String> variables) {
    this(adapter, "payments-" + adapter, variables);
  }

  VariantServer(String adapter, String name, Map<String, String> variables) {
    this.name = name;
    this.dir = wlp.resolve("usr/servers/" + name);
    try {
      deleteRecursively(dir);
      Files.createDirectories(dir.resolve("apps"));
      Files.createDirectories(dir.resolve("configDropins/overrides"));
      Files.copy(Path.of(System.getProperty("payments.config")), dir.resolve("server.xml"));
      Files.writeString(dir.resolve("jvm.options"), JVM_OPTIONS, StandardCharsets.UTF_8);
      copyDirectory(wlp.resolve("usr/servers/payments/lib/jdbc"), dir.resolve("lib/jdbc"));
      StringBuilder vars = new StringBuilder("<server>\n");
      vars.append("  <variable name=\"default.http.port\" value=\"").append(port).append("\"/>\n");
      Map<String, String> all = new java.util.TreeMap<>(Map.of("payments.dev-mode", "true"));
      // No OpenAPI document on these servers: building it scans every class of the WAR's jars on
      // each start (7 to 24 s here, on ~30 starts a CI run). OpenApiIT checks the document on the
      // server Maven starts, which keeps the app's own settings.
      all.put("mp.openapi.scan.disable", "true");
      all.putAll(variables);
      all.forEach(
          (k, v) ->
              vars.append("  <variable name=\"")
                  .append(k)
                  .append("\" value=\"")
                  .append(v)
                  .append("\"/>\n"));
      vars.append("</server>\n");
      Files.writeString(
          dir.resolve("configDropins/overrides/broker.xml"), vars, StandardCharsets.UTF_8);
      Path war = dir.resolve("apps/postbox-payments-app.war");
      Files.copy(Path.of(System.getProperty("payments.war")), war);
      Path adapterJars = Path.of(System.getProperty("payments.adapters")).resolve(adapter);
      if (!Files.isDirectory(adapterJars)) {
        return; // the WAR as built holds this adapter (Artemis, with the embedded broker)
      }
      try (FileSystem zip = FileSystems.newFileSystem(war);
          Stream<Path> jars = Files.list(adapterJars)) {
        for (Path jar : (Iterable<Path>) jars::iterator) {
          Files.copy(
              jar,
              zip.getPath("/WEB-INF/lib/" + jar.getFileName()),
              StandardCopyOption.REPLACE_EXISTING);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Adds the crash harness's instrument ({@link dev.postbox.payments.crash.CrashPoints}, a jar of
   * this module's test code) to this server's copy of the WAR, and starts the server's JVM with
   * crash points on from the next start.
   *
   * @param timeZone the JVM's default time zone, or null for the machine's
   * @return the directory where a test arms a point and sees it reached
   */
  Path enableCrashPoints(String timeZone) {
    Path points = dir.resolve("crashpoints");
    try {
      Files.createDirectories(points);
      Path jar = Path.of(System.getProperty("payments.crashpoints.jar"));
      try (FileSystem zip =
          FileSystems.newFileSystem(dir.resolve("apps/postbox-payments-app.war"))) {
        Files.copy(
            jar,
            zip.getPath("/WEB-INF/lib/postbox-crashpoints.jar"),
            StandardCopyOption.REPLACE_EXISTING);
      }
      Files.writeString(
          dir.resolve("jvm.options"),
          JVM_OPTIONS
              + "-Ddev.postbox.crashpoints="
              + points.toAbsolutePath()
              + "\n"
              + (timeZone == null ? "" : "-Duser.timezone=" + timeZone + "\n"),
          StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return points;
  }

  /** Adds a jar to this server's copy of the WAR's WEB-INF/lib. */
  void addToWar(Path jar, String name) {
    try (FileSystem zip = FileSystems.newFileSystem(dir.resolve("apps/postbox-payments-app.war"))) {
      Files.copy(jar, zip.getPath("/WEB-INF/lib/" + name), StandardCopyOption.REPLACE_EXISTING);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Enables more Liberty features on this server, next to those of the app's server.xml. */
  void addFeatures(String... features) {
    StringBuilder xml = new StringBuilder("<server>\n  <featureManager>\n");
    for (String f : features) {
      xml.append("    <feature>").append(f).append("</feature>\n");
    }
    xml.append("  </featureManager>\n</server>\n");
    try {
      Files.writeString(
          dir.resolve("configDropins/overrides/features.xml"), xml, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The folder of the server of that name. */
  static Path dirOf(String name) {
    return Path.of(System.getProperty("liberty.wlp")).resolve("usr/servers/" + name);
  }

  String url() {
    return "http://localhost:" + port;
  }

  void start() {
    run("start");
    PaymentsApi api = new PaymentsApi(url());
    org.awaitility.Awaitility.await()
        .atMost(Duration.ofMinutes(2))
        .pollInterval(Duration.ofMillis(100))
        .ignoreExceptions()
        .until(() -> api.get("/health/ready").statusCode() == 200);
  }

  /**
   * Starts the server's process and waits until its log shows the text (for an application that is
   * expected to refuse to start).
   */
  void startAndAwaitLog(String text) {
    run("start");
    org.awaitility.Awaitility.await()
        .atMost(Duration.ofMinutes(2))
        .pollInterval(Duration.ofMillis(100))
        .until(() -> log().contains(text));
  }

  /** SIGKILL: no shutdown hooks, no graceful anything; then waits until the process is gone. */
  void kill() {
    ProcessHandle.of(pid())
        .ifPresent(
            p -> {
              p.destroyForcibly();
              p.onExit().orTimeout(30, TimeUnit.SECONDS).join();
            });
  }

  /**
   * Writes the server's thread dump ({@code jcmd <pid> Thread.print}) next to its logs.
   *
   * @return the file
   */
  Path threadDump() throws IOException, InterruptedException {
    Path out = dir.resolve("logs/threads-" + System.currentTimeMillis() + ".txt");
    Path jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd");
    Process p =
        new ProcessBuilder(jcmd.toString(), Long.toString(pid()), "Thread.print")
            .redirectErrorStream(true)
            .redirectOutput(out.toFile())
            .start();
    p.waitFor(60, TimeUnit.SECONDS);
    return out;
  }

  /** SIGSTOP: the whole process stops at once, as in a long stop-the-world pause. */
  void pause() {
    signal("STOP");
  }

  /** SIGCONT after {@link #pause}. */
  void resume() {
    signal("CONT");
  }

  private void signal(String signal) {
    try {
      Process p = new ProcessBuilder("kill", "-" + signal, Long.toString(pid())).start();
      if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IllegalStateException("kill -" + signal + " failed for server " + name);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  long pid() {
    Path pidFile = wlp.resolve("usr/servers/.pid/" + name + ".pid");
    try {
      return Long.parseLong(Files.readString(pidFile).trim());
    } catch (IOException | NumberFormatException e) {
      throw new IllegalStateException("no pid for server " + name, e);
    }
  }

  String log() {
    try {
      return Files.readString(dir.resolve("logs/messages.log"));
    } catch (IOException e) {
      return "(no log: " + e + ")";
    }
  }

  @Override
  public void close() {
    run("stop");
  }

  private void run(String action) {
    try {
      Process p =
          new ProcessBuilder(wlp.resolve("bin/server").toString(), action, name)
              .redirectErrorStream(true)
              .redirectOutput(dir.resolve("server-" + action + ".out").toFile())
              .start();
      if (!p.waitFor(3, TimeUnit.MINUTES) || (p.exitValue() != 0 && action.equals("start"))) {
        throw new IllegalStateException(
            "server "
                + action
                + " failed: "
                + Files.readString(dir.resolve("server-" + action + ".out")));
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static int freePort() {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static void copyDirectory(Path from, Path to) throws IOException {
    Files.createDirectories(to);
    try (Stream<Path> files = Files.list(from)) {
      for (Path f : (Iterable<Path>) files::iterator) {
        Files.copy(f, to.resolve(f.getFileName()));
      }
    }
  }

  private static void deleteRecursively(Path p) throws IOException {
    if (!Files.exists(p)) {
      return;
    }
    try (Stream<Path> all = Files.walk(p)) {
      for (Path f : (Iterable<Path>) all.sorted(java.util.Comparator.reverseOrder())::iterator) {
        Files.delete(f);
      }
    }
  }
}
