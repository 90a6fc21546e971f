package dev.postbox.runtime.jakarta.deployment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.broker.kafka.testing.KafkaTestBroker;
import java.io.IOException;
import java.io.StringReader;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URL;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import javax.xml.parsers.DocumentBuilderFactory;
import org.jboss.arquillian.container.test.api.Deployment;
import org.jboss.arquillian.junit5.ArquillianExtension;
import org.jboss.arquillian.test.api.ArquillianResource;
import org.jboss.shrinkwrap.api.ShrinkWrap;
import org.jboss.shrinkwrap.api.asset.StringAsset;
import org.jboss.shrinkwrap.api.importer.ExplodedImporter;
import org.jboss.shrinkwrap.api.spec.JavaArchive;
import org.jboss.shrinkwrap.api.spec.WebArchive;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;
import org.xml.sax.InputSource;

/**
 * docs/getting-started.md, built and run as written: the page's files (each a bold file name
 * followed by its code block) are read from the page, the Java sources compiled, and the WAR
 * deployed with the Kafka adapter on the Arquillian-managed Liberty, whose {@code jdbc/postbox} is
 * a PostgreSQL schema of its own. Its only change: the Kafka address in the page's config file is
 * the test broker's. The page's pom must import the BOM with every Postbox artifact managed there,
 * and the features of its server.xml must be exactly the ones this server runs the app with
 * (besides Arquillian's own). The Java is compiled against the test class path, not the page's pom.
 */
@ExtendWith(ArquillianExtension.class)
class GettingStartedIT {

  private static final Path REPO = Path.of(System.getProperty("postbox.repo"));
  private static final Path GUIDE = REPO.resolve("docs/getting-started.md");
  private static final Pattern FILE =
      Pattern.compile("\\*\\*`([^`]+)`\\*\\*\\s*\\n\\s*```\\w*\\n(.*?)\\n```", Pattern.DOTALL);
  private static Deployments.TestSchema db;

  /** The page's files: path to content, in page order. */
  static Map<String, String> guideFiles() {
    try {
      Map<String, String> files = new LinkedHashMap<>();
      Matcher m = FILE.matcher(Files.readString(GUIDE));
      while (m.find()) {
        files.put(m.group(1), m.group(2) + "\n");
      }
      return files;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Deployment(testable = false)
  public static WebArchive deployment() throws Exception {
    Map<String, String> files = guideFiles();
    KafkaTestBroker kafka = KafkaTestBroker.shared();
    kafka.createTopic("orders", 4);
    db = Deployments.freshPostgresSchema("arq_guide");

    Properties config = new Properties();
    config.load(
        new StringReader(files.get("src/main/resources/META-INF/microprofile-config.properties")));
    Map<String, String> settings = new LinkedHashMap<>();
    config.stringPropertyNames().forEach(k -> settings.put(k, config.getProperty(k)));
    settings.put("postbox.broker.bootstrap.servers", kafka.bootstrapServers());

    Path classes = compile(files);
    return Deployments.war("getting-started", "kafka", "jdbc/postbox", settings)
        .merge(
            ShrinkWrap.create(ExplodedImporter.class)
                .importDirectory(classes.toFile())
                .as(JavaArchive.class),
            "/WEB-INF/classes")
        .addAsResource(
            new StringAsset(files.get("src/main/resources/META-INF/persistence.xml")),
            "META-INF/persistence.xml");
  }

  @ArquillianResource URL deployed;

  @Test
  void thePagesApplicationRecordsAnOrderAndShipsItOnce() throws Exception {
    HttpResponse<String> placed =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(URI.create(deployed + "orders?amountCents=1250"))
                    .POST(HttpRequest.BodyPublishers.noBody())
                    .build(),
                HttpResponse.BodyHandlers.ofString());
    assertThat(placed.statusCode()).as(placed.body()).isEqualTo(200);
    String orderId = placed.body().trim();

    await()
        .atMost(Duration.ofSeconds(60))
        .until(
            () ->
                db.count("SELECT COUNT(*) FROM shop_shipment WHERE orderid = '" + orderId + "'")
                    == 1);
    assertThat(db.count("SELECT COUNT(*) FROM shop_order")).isEqualTo(1);
    assertThat(db.count("SELECT COUNT(*) FROM postbox_outbox WHERE event_type = 'OrderPlaced'"))
        .isEqualTo(1);
  }

  @Test
  void thePagesPomImportsTheBomWhichManagesEveryPostboxArtifactItUses() throws Exception {
    Document pom = xml("<project>" + guideFiles().get("pom.xml") + "</project>");
    Element imported =
        (Element)
            ((Element) pom.getElementsByTagName("dependencyManagement").item(0))
                .getElementsByTagName("dependency")
                .item(0);
    assertThat(text(imported, "artifactId")).isEqualTo("postbox-bom");
    assertThat(text(imported, "scope")).isEqualTo("import");

    Set<String> managed = new TreeSet<>();
    NodeList bom =
        DocumentBuilderFactory.newInstance()
            .newDocumentBuilder()
            .parse(REPO.resolve("runtime-liberty/bom/pom.xml").toFile())
            .getElementsByTagName("artifactId");
    for (int i = 0; i < bom.getLength(); i++) {
      managed.add(bom.item(i).getTextContent().trim());
    }
    List<String> postboxArtifacts = new ArrayList<>();
    NodeList deps =
        ((Element) pom.getElementsByTagName("dependencies").item(1))
            .getElementsByTagName("dependency");
    for (int i = 0; i < deps.getLength(); i++) {
      Element d = (Element) deps.item(i);
      if (text(d, "groupId").equals("dev.postbox")) {
        assertThat(d.getElementsByTagName("version").getLength())
            .as("%s takes its version from the BOM", text(d, "artifactId"))
            .isZero();
        postboxArtifacts.add(text(d, "artifactId"));
      }
    }
    assertThat(postboxArtifacts).containsExactly("postbox-runtime", "postbox-broker-kafka");
    assertThat(managed).containsAll(postboxArtifacts);
  }

  @Test
  void thePagesServerFeaturesAreTheOnesThisServerRunsItWith() throws Exception {
    Document guide = xml(guideFiles().get("src/main/liberty/config/server.xml"));
    Document ours =
        DocumentBuilderFactory.newInstance()
            .newDocumentBuilder()
            .parse(
                Path.of(System.getProperty("liberty.wlp"), "usr/servers/arquillian/server.xml")
                    .toFile());
    Set<String> appFeatures = features(ours);
    appFeatures.removeAll(Set.of("servlet-6.0", "localConnector-1.0")); // Arquillian's own
    assertThat(features(guide)).isEqualTo(appFeatures);
    assertThat(
            ((Element) guide.getElementsByTagName("dataSource").item(0)).getAttribute("jndiName"))
        .isEqualTo("jdbc/postbox");
  }

  private static Set<String> features(Document server) {
    Set<String> features = new TreeSet<>();
    NodeList all = server.getElementsByTagName("feature");
    for (int i = 0; i < all.getLength(); i++) {
      features.add(all.item(i).getTextContent().trim());
    }
    return features;
  }

  private static Path compile(Map<String, String> files) throws IOException {
    Path src = Files.createTempDirectory("getting-started-src");
    Path out = Files.createTempDirectory("getting-started-classes");
    List<String> args =
        new ArrayList<>(
            List.of(
                "--release",
                "17",
                "-classpath",
                System.getProperty("java.class.path"),
                "-d",
                out.toString()));
    for (Map.Entry<String, String> f : files.entrySet()) {
      if (f.getKey().endsWith(".java")) {
        Path file = src.resolve(f.getKey());
        Files.createDirectories(file.getParent());
        Files.writeString(file, f.getValue());
        args.add(file.toString());
      }
    }
    assertThat(args).as("the page's Java files").hasSizeGreaterThan(6 + 4);
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    int status = javac.run(null, null, null, args.toArray(String[]::new));
    assertThat(status).as("the page's Java files compile").isZero();
    return out;
  }

  private static Document xml(String text) throws Exception {
    return DocumentBuilderFactory.newInstance()
        .newDocumentBuilder()
        .parse(new InputSource(new StringReader(text.replaceFirst("^<\\?xml[^>]*\\?>", ""))));
  }

  private static String text(Element parent, String tag) {
    NodeList n = parent.getElementsByTagName(tag);
    return n.getLength() == 0 ? "" : n.item(0).getTextContent().trim();
  }
}
