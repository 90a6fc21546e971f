package dev.postbox.payments;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * The README's broker swaps, as a new user runs them: the local broker started with its script
 * ({@code scripts/kafka-local.sh start}, {@code scripts/elasticmq-local.sh start}, {@code
 * scripts/rabbitmq-local.sh start}, unchanged, on their default ports), and the WAR with that
 * adapter's jars and exactly the server variables of the Maven profile ({@code -Pkafka}, {@code
 * -Psqs}, {@code -Prabbitmq}) that {@code scripts/payments.sh} would use, read from this module's
 * {@code pom.xml}. Then a hundred orders, each charged and notified once.
 *
 * <p>It does not run {@code scripts/payments.sh} itself: that is a Maven build, and one nested in
 * {@code ./mvnw verify} would rebuild the very modules under test. The embedded default (no
 * profile, no script) is the server the build starts for {@link PaymentsFlowIT}.
 */
class DocumentedSwapsIT {

  private static final Path REPO = Path.of(System.getProperty("payments.repo"));

  @Test
  void kafkaLocalThenTheKafkaProfileChargesOrders() throws Exception {
    swap("kafka-local", "kafka");
  }

  @Test
  void elasticMqLocalThenTheSqsProfileChargesOrders() throws Exception {
    swap("elasticmq-local", "sqs");
  }

  @Test
  void rabbitmqLocalThenTheRabbitmqProfileChargesOrders() throws Exception {
    // What scripts/payments.sh adds in dev mode (the local server's guest account), and a vhost
    // of the test's own in place of the profile's "/", so the server keeps no queues of this run.
    String vhost = dev.postbox.broker.rabbitmq.testing.LocalRabbitMq.newVhost("payments-swap");
    try {
      swap(
          "rabbitmq-local",
          "rabbitmq",
          Map.of(
              "postbox.broker.username", "guest",
              "postbox.broker.password", "guest",
              "postbox.broker.vhost", vhost));
    } finally {
      dev.postbox.broker.rabbitmq.testing.LocalRabbitMq.deleteVhost(vhost);
    }
  }

  private static void swap(String script, String profile) throws Exception {
    swap(script, profile, Map.of());
  }

  private static void swap(String script, String profile, Map<String, String> added)
      throws Exception {
    Map<String, String> variables = new java.util.HashMap<>(profileVariables(profile));
    variables.putAll(added);
    assertThat(variables).containsEntry("postbox.broker", profile);
    // as shipped: the OpenAPI document is built, over the adapter's jars too
    variables.put("mp.openapi.scan.disable", "false");
    try (LocalBroker broker = LocalBroker.start(script);
        VariantServer server = new VariantServer(profile, "payments-swap-" + profile, variables)) {
      server.start();
      PaymentsApi api = new PaymentsApi(server.url());
      HundredOrders.placeAndAwait(api);
      var openApi = api.get("/openapi");
      assertThat(openApi.statusCode()).isEqualTo(200);
      assertThat(openApi.body()).containsPattern("(?m)^openapi: 3\\.").contains("/orders");
    }
  }

  /** The {@code liberty.defaultVar.*} properties of a profile in pom.xml, as server variables. */
  static Map<String, String> profileVariables(String profile) throws Exception {
    Element project =
        DocumentBuilderFactory.newInstance()
            .newDocumentBuilder()
            .parse(Path.of(System.getProperty("payments.pom")).toFile())
            .getDocumentElement();
    NodeList profiles = project.getElementsByTagName("profile");
    for (int i = 0; i < profiles.getLength(); i++) {
      Element p = (Element) profiles.item(i);
      if (!profile.equals(child(p, "id").getTextContent().trim())) {
        continue;
      }
      Map<String, String> variables = new TreeMap<>();
      NodeList properties = child(p, "properties").getChildNodes();
      for (int j = 0; j < properties.getLength(); j++) {
        Node n = properties.item(j);
        String prefix = "liberty.defaultVar.";
        if (n instanceof Element e && e.getTagName().startsWith(prefix)) {
          variables.put(e.getTagName().substring(prefix.length()), e.getTextContent().trim());
        }
      }
      return variables;
    }
    throw new IllegalStateException("no profile " + profile + " in " + project.getBaseURI());
  }

  private static Element child(Element parent, String tag) {
    NodeList all = parent.getChildNodes();
    for (int i = 0; i < all.getLength(); i++) {
      if (all.item(i) instanceof Element e && e.getTagName().equals(tag)) {
        return e;
      }
    }
    throw new IllegalStateException("no <" + tag + "> in <" + parent.getTagName() + ">");
  }

  /**
   * A broker under {@code scripts/}, started with its script and stopped if this test started it.
   */
  private record LocalBroker(String script, boolean startedHere) implements AutoCloseable {

    static LocalBroker start(String script) {
      String out = run(script, "start");
      assertThat(out).as(out).containsPattern(script + ": (up on port|already running)");
      return new LocalBroker(script, !out.contains("already running"));
    }

    @Override
    public void close() {
      if (startedHere) {
        run(script, "stop");
      }
    }

    private static String run(String script, String action) {
      try {
        Path log = Files.createTempFile(script + "-" + action, ".out");
        Process p =
            new ProcessBuilder(REPO.resolve("scripts/" + script + ".sh").toString(), action)
                .directory(REPO.toFile())
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        boolean ended = p.waitFor(10, TimeUnit.MINUTES);
        String out = Files.readString(log, StandardCharsets.UTF_8);
        if (!ended) {
          p.destroyForcibly();
          throw new IllegalStateException("scripts/" + script + ".sh " + action + " hung: " + out);
        }
        if (p.exitValue() != 0) {
          throw new IllegalStateException(
              "scripts/" + script + ".sh " + action + " exited " + p.exitValue() + ": " + out);
        }
        return out;
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
    }
  }
}
