package dev.postbox.benchmarks.app;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Comparator;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A Liberty server running the payments app as a user deploys it (the built WAR, the app's own
 * server.xml, settings as server variables, an adapter's jars added to the WAR as {@code -Pkafka}
 * does), plus the benchmark's peers: this module's {@code app.endpoints} package, packed into a jar
 * in this server's copy of the WAR only.
 *
 * <p>The files come from {@code mvn -Papp package} in this module (see its pom): Open Liberty under
 * {@code target/liberty/wlp}, the WAR, the drivers and the Kafka adapter's jars under {@code
 * target/app}.
 */
final class AppServer implements AutoCloseable {

  private final Path wlp;
  private final String name;
  private final Path dir;
  private final int port = freePort();

  /**
   * @param target this module's build directory
   * @param serverXml the payments app's server.xml
   * @param adapter {@code kafka} to add that adapter's jars, or null for the WAR as built (Artemis)
   * @param variables server variables: the database and broker settings
   */
  AppServer(Path target, Path serverXml, String name, String adapter, Map<String, String> variables)
      throws IOException {
    this.wlp = target.resolve("liberty/wlp");
    this.name = name;
    this.dir = wlp.resolve("usr/servers/" + name);
    deleteRecursively(dir);
    Files.createDirectories(dir.resolve("apps"));
    Files.createDirectories(dir.resolve("configDropins/overrides"));
    Files.createDirectories(dir.resolve("lib/jdbc"));
    Files.copy(serverXml, dir.resolve("server.xml"));
    try (Stream<Path> jars = Files.list(target.resolve("app/jdbc"))) {
      for (Path jar : (Iterable<Path>) jars::iterator) {
        Files.copy(jar, dir.resolve("lib/jdbc").resolve(jar.getFileName()));
      }
    }
    StringBuilder vars = new StringBuilder("<server>\n");
    Map<String, String> all = new TreeMap<>(variables);
    all.put("default.http.port", Integer.toString(port));
    all.forEach(
        (k, v) ->
            vars.append("  <variable name=\"")
                .append(k)
                .append("\" value=\"")
                .append(v.replace("&", "&amp;").replace("\"", "&quot;"))
                .append("\"/>\n"));
    vars.append("</server>\n");
    Files.writeString(
        dir.resolve("configDropins/overrides/bench.xml"), vars, StandardCharsets.UTF_8);
    Path war = dir.resolve("apps/postbox-payments-app.war");
    Files.copy(target.resolve("app/postbox-payments-app.war"), war);
    try (FileSystem zip = FileSystems.newFileSystem(war)) {
      Files.copy(
          endpointsJar(target),
          zip.getPath("/WEB-INF/lib/postbox-bench-endpoints.jar"),
          StandardCopyOption.REPLACE_EXISTING);
      if (adapter != null) {
        try (Stream<Path> jars = Files.list(target.resolve("app/adapters").resolve(adapter))) {
          for (Path jar : (Iterable<Path>) jars::iterator) {
            Files.copy(
                jar,
                zip.getPath("/WEB-INF/lib/" + jar.getFileName()),
                StandardCopyOption.REPLACE_EXISTING);
          }
        }
      }
    }
  }

  /**
   * The endpoints package and a beans.xml, as a jar: a bean archive the WAR's CDI and JAX-RS scan.
   */
  private static Path endpointsJar(Path target) throws IOException {
    Path classes = target.resolve("classes");
    String pkg = "dev/postbox/benchmarks/app/endpoints";
    Path jar = target.resolve("app/postbox-bench-endpoints.jar");
    Files.deleteIfExists(jar);
    try (FileSystem zip = FileSystems.newFileSystem(jar, Map.of("create", "true"));
        Stream<Path> files = Files.list(classes.resolve(pkg))) {
      Files.createDirectories(zip.getPath("/" + pkg));
      for (Path f : (Iterable<Path>) files::iterator) {
        Files.copy(f, zip.getPath("/" + pkg + "/" + f.getFileName()));
      }
      Files.createDirectories(zip.getPath("/META-INF"));
      Files.writeString(
          zip.getPath("/META-INF/beans.xml"),
          "<beans xmlns=\"https://jakarta.ee/xml/ns/jakartaee\" version=\"4.0\""
              + " bean-discovery-mode=\"annotated\"/>\n");
    }
    return jar;
  }

  /** Runs {@code jcmd} on the server's JVM (e.g. {@code JFR.start name=bench settings=profile}). */
  void jcmd(String... command) throws IOException, InterruptedException {
    long pid =
        Long.parseLong(Files.readString(wlp.resolve("usr/servers/.pid/" + name + ".pid")).trim());
    java.util.List<String> cmd = new java.util.ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "jcmd").toString());
    cmd.add(Long.toString(pid));
    cmd.addAll(java.util.List.of(command));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(2, TimeUnit.MINUTES) || p.exitValue() != 0) {
      throw new IllegalStateException("jcmd " + String.join(" ", command) + " failed: " + out);
    }
  }

  long pid() throws IOException {
    return Long.parseLong(
        Files.readString(wlp.resolve("usr/servers/.pid/" + name + ".pid")).trim());
  }

  String url() {
    return "http://localhost:" + port;
  }

  /** Starts the server and waits, at most 3 minutes, until the app reports ready. */
  void start() throws IOException, InterruptedException {
    run("start");
    HttpClient http = HttpClient.newHttpClient();
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
    while (true) {
      try {
        HttpResponse<Void> r =
            http.send(
                HttpRequest.newBuilder(URI.create(url() + "/health/ready")).build(),
                HttpResponse.BodyHandlers.discarding());
        if (r.statusCode() == 200) {
          return;
        }
      } catch (IOException notYet) {
        // the port opens a little after the process starts
      }
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(
            "server " + name + " not ready after 3 minutes; see " + dir.resolve("logs"));
      }
      Thread.sleep(500); // polling a process we started, not a test's async work
    }
  }

  @Override
  public void close() throws IOException, InterruptedException {
    run("stop");
  }

  private void run(String action) throws IOException, InterruptedException {
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
  }

  private static int freePort() {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static void deleteRecursively(Path p) throws IOException {
    if (!Files.exists(p)) {
      return;
    }
    try (Stream<Path> all = Files.walk(p)) {
      for (Path f : (Iterable<Path>) all.sorted(Comparator.reverseOrder())::iterator) {
        Files.delete(f);
      }
    }
  }
}
