package dev.postbox.runtime.jakarta;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A real Open Liberty server process for integration tests: writes its server.xml, jvm.options and
 * a loose application (the module's classes plus the needed jars from the test class path), starts
 * it, kills it with SIGKILL, and starts it again.
 */
final class LibertyServer implements AutoCloseable {

  private static final List<String> WAR_LIBRARIES =
      List.of(
          "postbox-spi",
          "postbox-broker-kafka",
          "kafka-clients",
          "zstd-jni",
          "lz4-java",
          "snappy-java",
          "slf4j-api",
          "slf4j-jdk14",
          "flyway-",
          "jackson-core");

  private final Path wlp = Path.of(System.getProperty("liberty.wlp"));
  private final String name = "postboxIT";
  private final Path dir = wlp.resolve("usr/servers/" + name);
  private final int port = freePort();
  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  LibertyServer(String pgSchema, Map<String, String> systemProperties) {
    try {
      Files.createDirectories(dir.resolve("apps"));
      Files.writeString(dir.resolve("server.xml"), serverXml(pgSchema), StandardCharsets.UTF_8);
      StringBuilder jvm = new StringBuilder("-Xmx512m\n");
      systemProperties.forEach(
          (k, v) -> jvm.append("-D").append(k).append('=').append(v).append('\n'));
      Files.writeString(dir.resolve("jvm.options"), jvm, StandardCharsets.UTF_8);
      Files.writeString(
          dir.resolve("apps/postbox-it.war.xml"), looseApplication(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  String baseUrl() {
    return "http://localhost:" + port;
  }

  /** Starts the server and waits until the application reports ready. */
  void start() {
    run("start");
    waitUntilReady(Duration.ofSeconds(120));
  }

  /** SIGKILL: no shutdown hooks, no graceful anything. */
  void kill() {
    pid()
        .ifPresent(
            pid ->
                ProcessHandle.of(pid)
                    .ifPresent(
                        p -> {
                          p.destroyForcibly();
                          p.onExit().orTimeout(30, TimeUnit.SECONDS).join();
                        }));
  }

  /** Waits until the server process has gone (e.g. it halted itself). */
  void awaitExit(Duration max) {
    pid()
        .ifPresent(
            pid ->
                ProcessHandle.of(pid)
                    .ifPresent(
                        p -> p.onExit().orTimeout(max.toSeconds(), TimeUnit.SECONDS).join()));
  }

  String log() {
    try {
      return Files.readString(dir.resolve("logs/messages.log"));
    } catch (IOException e) {
      return "(no messages.log: " + e + ")";
    }
  }

  HttpResponse<String> post(String path, String... headers)
      throws IOException, InterruptedException {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(baseUrl() + path));
    if (headers.length > 0) {
      b.headers(headers);
    }
    return http.send(
        b.timeout(Duration.ofSeconds(30)).POST(HttpRequest.BodyPublishers.noBody()).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  HttpResponse<String> get(String path) throws IOException, InterruptedException {
    return http.send(
        HttpRequest.newBuilder(URI.create(baseUrl() + path))
            .timeout(Duration.ofSeconds(30))
            .GET()
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  @Override
  public void close() {
    run("stop");
  }

  private void waitUntilReady(Duration max) {
    try {
      org.awaitility.Awaitility.await()
          .atMost(max)
          .pollInterval(Duration.ofMillis(250))
          .ignoreExceptionsInstanceOf(IOException.class)
          .until(() -> get("/health/ready").statusCode() == 200);
    } catch (org.awaitility.core.ConditionTimeoutException e) {
      throw new IllegalStateException("Liberty not ready within " + max + "\n" + log(), e);
    }
  }

  private java.util.Optional<Long> pid() {
    Path pidFile = wlp.resolve("usr/servers/.pid/" + name + ".pid");
    try {
      return Files.exists(pidFile)
          ? java.util.Optional.of(Long.parseLong(Files.readString(pidFile).trim()))
          : java.util.Optional.empty();
    } catch (IOException | NumberFormatException e) {
      return java.util.Optional.empty();
    }
  }

  private void run(String action) {
    try {
      Process p =
          new ProcessBuilder(wlp.resolve("bin/server").toString(), action, name)
              .redirectErrorStream(true)
              .redirectOutput(dir.resolve("server-" + action + ".out").toFile())
              .start();
      if (!p.waitFor(180, TimeUnit.SECONDS) || (p.exitValue() != 0 && action.equals("start"))) {
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

  private String serverXml(String pgSchema) {
    String driver = classpathEntry("postgresql-");
    return """
        <?xml version="1.0" encoding="UTF-8"?>
        <server description="Postbox runtime IT">
          <featureManager>
            <feature>cdi-4.0</feature>
            <feature>restfulWS-3.1</feature>
            <feature>jsonb-3.0</feature>
            <feature>persistence-3.1</feature>
            <feature>concurrent-3.0</feature>
            <feature>mpConfig-3.1</feature>
            <feature>mpHealth-4.0</feature>
            <feature>mpMetrics-5.1</feature>
          </featureManager>
          <httpEndpoint id="defaultHttpEndpoint" host="localhost" httpPort="%d" httpsPort="-1"/>
          <mpMetrics authentication="false"/>
          <library id="postgresql"><file name="%s"/></library>
          <dataSource id="postbox" jndiName="jdbc/postbox" isolationLevel="TRANSACTION_READ_COMMITTED">
            <jdbcDriver libraryRef="postgresql"/>
            <properties.postgresql serverName="127.0.0.1" portNumber="5432" databaseName="test" user="postgres" currentSchema="%s"/>
          </dataSource>
          <webApplication location="postbox-it.war.xml" contextRoot="/"/>
          <logging traceSpecification="*=info:org.apache.kafka.*=warning:org.flywaydb.*=warning"/>
        </server>
        """
        .formatted(port, driver, pgSchema);
  }

  /** A Liberty loose application: directories and jars in place, nothing packaged. */
  private String looseApplication() {
    StringBuilder xml =
        new StringBuilder("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<archive>\n");
    xml.append(dir("/WEB-INF/classes", System.getProperty("runtime.classes")));
    String itPackage = "dev/postbox/runtime/jakarta/it";
    xml.append(
        dir(
            "/WEB-INF/classes/" + itPackage,
            System.getProperty("runtime.testClasses") + "/" + itPackage));
    for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
      Path p = Path.of(entry);
      String file = p.getFileName().toString();
      boolean wanted =
          WAR_LIBRARIES.stream().anyMatch(file::startsWith)
              || (Files.isDirectory(p) && isModule(p));
      if (!wanted || file.endsWith("-tests.jar") || entry.contains("test-classes")) {
        continue;
      }
      if (Files.isDirectory(p)) {
        String jarName = p.getParent().getParent().getFileName() + ".jar";
        xml.append("  <archive targetInArchive=\"/WEB-INF/lib/")
            .append(jarName)
            .append("\">\n  ")
            .append(dir("/", entry))
            .append("  </archive>\n");
      } else {
        xml.append("  <file targetInArchive=\"/WEB-INF/lib/")
            .append(file)
            .append("\" sourceOnDisk=\"")
            .append(entry)
            .append("\"/>\n");
      }
    }
    return xml.append("</archive>\n").toString();
  }

  /** Reactor modules show up as their target/classes directories. */
  private static boolean isModule(Path p) {
    Path module = p.getParent() == null ? null : p.getParent().getParent();
    return module != null
        && List.of("spi", "broker-kafka").contains(module.getFileName().toString())
        && p.getFileName().toString().equals("classes");
  }

  private static String dir(String target, String source) {
    return "  <dir targetInArchive=\"" + target + "\" sourceOnDisk=\"" + source + "\"/>\n";
  }

  private static String classpathEntry(String prefix) {
    for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
      if (Path.of(entry).getFileName().toString().startsWith(prefix)) {
        return entry;
      }
    }
    throw new IllegalStateException("no " + prefix + "* on the test class path");
  }

  private static int freePort() {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
