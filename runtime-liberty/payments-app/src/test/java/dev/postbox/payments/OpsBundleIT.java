package dev.postbox.payments;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The operator's bundle in {@code docs/ops} fits the running app: every {@code postbox_*} metric
 * that the alert rules and the Grafana dashboard query is on the server's {@code /metrics}, with
 * the labels they group by; {@code promtool} accepts the rules and passes their unit tests; every
 * alert has its runbook section.
 */
class OpsBundleIT {

  private static final Path OPS =
      Path.of(System.getProperty("payments.repo", "../..")).resolve("docs/ops");
  private static final Pattern METRIC = Pattern.compile("\\bpostbox_[a-z_]+\\b");

  private final PaymentsApi api = new PaymentsApi();

  @Test
  void everyMetricTheRulesAndTheDashboardQueryIsServedByTheApp() throws IOException {
    var scrape = api.get("/metrics");
    assertThat(scrape.statusCode()).isEqualTo(200);
    Set<String> served = new HashSet<>();
    Set<String> subscriptionTagged = new HashSet<>();
    for (String line : scrape.body().split("\n")) {
      if (line.isBlank() || line.startsWith("#")) {
        continue;
      }
      int end = line.indexOf('{') >= 0 ? line.indexOf('{') : line.indexOf(' ');
      String name = line.substring(0, end);
      served.add(name);
      if (line.contains("subscription=\"")) {
        subscriptionTagged.add(name);
      }
    }

    Set<String> queried = new TreeSet<>();
    for (String query : rulesExpressions()) {
      queried.addAll(metricsIn(query));
    }
    List<String> dashboardQueries = dashboardExpressions();
    assertThat(dashboardQueries).hasSizeGreaterThan(10);
    for (String query : dashboardQueries) {
      queried.addAll(metricsIn(query));
    }

    assertThat(queried).hasSizeGreaterThan(10);
    assertThat(served).containsAll(queried);
    // The inbox rules and panels group by subscription: the app's inbox metrics carry that label.
    queried.stream()
        .filter(n -> n.startsWith("postbox_inbox_"))
        .forEach(n -> assertThat(subscriptionTagged).as(n).contains(n));
  }

  @Test
  void promtoolAcceptsTheRulesAndPassesTheirUnitTests() throws Exception {
    Path promtool = onPath("promtool");
    if (promtool == null && "1".equals(System.getenv("CI_REQUIRE_PROMTOOL"))) {
      throw new IllegalStateException(
          "the ops bundle test needs promtool: apt-get install prometheus");
    }
    Assumptions.assumeTrue(promtool != null, "promtool is not installed (Debian: prometheus)");
    assertThat(run(promtool.toString(), "check", "rules", "postbox-alerts.yml"))
        .contains("SUCCESS: 9 rules found");
    assertThat(run(promtool.toString(), "test", "rules", "postbox-alerts-test.yml"))
        .contains("SUCCESS");
  }

  @Test
  void everyAlertHasARunbookSectionAndEveryPanelAQueryOnPrometheus() throws IOException {
    String rules = Files.readString(OPS.resolve("postbox-alerts.yml"), StandardCharsets.UTF_8);
    String runbook = Files.readString(OPS.resolve("runbook.md"), StandardCharsets.UTF_8);
    Matcher alert = Pattern.compile("- alert: (\\w+)").matcher(rules);
    Matcher link = Pattern.compile("runbook: \"docs/ops/runbook.md#(\\w+)\"").matcher(rules);
    Set<String> sections = new HashSet<>();
    Matcher heading = Pattern.compile("(?m)^## (\\w+)$").matcher(runbook);
    while (heading.find()) {
      sections.add(heading.group(1).toLowerCase(Locale.ROOT));
    }
    int alerts = 0;
    while (alert.find()) {
      alerts++;
      assertThat(link.find()).as("a runbook link for " + alert.group(1)).isTrue();
      assertThat(sections).as("the runbook section of " + alert.group(1)).contains(link.group(1));
      // Every alert but the critical twin of lag has a section named after it.
      if (!alert.group(1).equals("PostboxOutboxLagCritical")) {
        assertThat(link.group(1)).isEqualTo(alert.group(1).toLowerCase(Locale.ROOT));
      }
    }
    assertThat(alerts).isEqualTo(9);

    JsonNode dashboard =
        new ObjectMapper().readTree(OPS.resolve("postbox-dashboard.json").toFile());
    Set<Integer> ids = new HashSet<>();
    for (JsonNode panel : dashboard.get("panels")) {
      assertThat(ids.add(panel.get("id").asInt())).as("unique panel ids").isTrue();
      if (!"row".equals(panel.get("type").asText())) {
        assertThat(panel.get("datasource").get("type").asText()).isEqualTo("prometheus");
        assertThat(panel.get("targets")).isNotEmpty();
      }
    }
  }

  private static List<String> rulesExpressions() throws IOException {
    List<String> out = new ArrayList<>();
    for (String line : Files.readAllLines(OPS.resolve("postbox-alerts.yml"))) {
      String t = line.trim();
      if (t.startsWith("expr:")) {
        out.add(t.substring("expr:".length()));
      }
    }
    assertThat(out).hasSize(9);
    return out;
  }

  private static List<String> dashboardExpressions() throws IOException {
    List<String> out = new ArrayList<>();
    new ObjectMapper()
        .readTree(OPS.resolve("postbox-dashboard.json").toFile())
        .findValues("expr")
        .forEach(v -> out.add(v.asText()));
    return out;
  }

  private static Set<String> metricsIn(String query) {
    Set<String> names = new TreeSet<>();
    Matcher m = METRIC.matcher(query);
    while (m.find()) {
      names.add(m.group());
    }
    return names;
  }

  private static Path onPath(String command) {
    for (String dir : System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator)) {
      Path p = Path.of(dir, command);
      if (Files.isExecutable(p)) {
        return p;
      }
    }
    return null;
  }

  /** Runs a command in docs/ops and returns its output; fails the test on a non-zero exit. */
  private static String run(String... command) throws Exception {
    Process p =
        new ProcessBuilder(command).directory(OPS.toFile()).redirectErrorStream(true).start();
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("promtool finished").isTrue();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.exitValue()).as(out).isZero();
    return out;
  }
}
