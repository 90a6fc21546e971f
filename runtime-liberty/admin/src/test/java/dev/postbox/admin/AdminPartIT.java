package dev.postbox.admin;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.admin.it.EmbeddingApplication;
import dev.postbox.admin.it.api.ApiApplication;
import java.io.File;
import java.net.URI;
import java.net.URL;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.stream.Stream;
import org.jboss.arquillian.container.test.api.Deployment;
import org.jboss.arquillian.container.test.api.OperateOnDeployment;
import org.jboss.arquillian.junit5.ArquillianExtension;
import org.jboss.arquillian.test.api.ArquillianResource;
import org.jboss.shrinkwrap.api.ShrinkWrap;
import org.jboss.shrinkwrap.api.asset.EmptyAsset;
import org.jboss.shrinkwrap.api.asset.StringAsset;
import org.jboss.shrinkwrap.api.importer.ExplodedImporter;
import org.jboss.shrinkwrap.api.spec.JavaArchive;
import org.jboss.shrinkwrap.api.spec.WebArchive;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The admin part as an embedding application gets it: a WAR of its own (context root {@code
 * /embedding}, its own JAX-RS root and BASIC login) with the runtime and this jar in WEB-INF/lib,
 * nothing else of Postbox's. Its server maps the role {@code postbox-admin} to the user {@code
 * operator}; {@code viewer} is signed in without it.
 */
@ExtendWith(ArquillianExtension.class)
class AdminPartIT {

  private static final String OPERATOR = "operator:operator-it-secret";
  private static final String VIEWER = "viewer:viewer-it-secret";

  @Deployment(name = "root", testable = false)
  public static WebArchive deployment() throws Exception {
    try (Connection c =
            DriverManager.getConnection("jdbc:postgresql://127.0.0.1:5432/test?user=postgres");
        Statement s = c.createStatement()) {
      s.execute("DROP SCHEMA IF EXISTS arq_admin CASCADE");
      s.execute("CREATE SCHEMA arq_admin");
    }
    WebArchive war =
        ShrinkWrap.create(WebArchive.class, "embedding.war")
            .addClass(EmbeddingApplication.class)
            .addAsWebInfResource(EmptyAsset.INSTANCE, "beans.xml")
            .setWebXML(
                new StringAsset(
                    """
                    <web-app xmlns="https://jakarta.ee/xml/ns/jakartaee" version="6.0">
                      <login-config>
                        <auth-method>BASIC</auth-method>
                        <realm-name>postbox</realm-name>
                      </login-config>
                    </web-app>
                    """))
            // No broker: the relay is off and nothing subscribes; the admin API reads the tables.
            .addAsResource(
                new StringAsset("postbox.relay.enabled=false\n"),
                "META-INF/microprofile-config.properties");
    return withPostbox(war);
  }

  /**
   * The same, with the JAX-RS root at {@code /api} and no security constraint of its own: only
   * {@link AdminGuard} stands between a caller and the API.
   */
  @Deployment(name = "api", testable = false)
  public static WebArchive deploymentUnderApi() throws Exception {
    WebArchive war =
        ShrinkWrap.create(WebArchive.class, "embedding-api.war")
            .addClass(ApiApplication.class)
            .addAsWebInfResource(EmptyAsset.INSTANCE, "beans.xml")
            .addAsResource(
                new StringAsset("postbox.relay.enabled=false\n"),
                "META-INF/microprofile-config.properties");
    return withPostbox(war);
  }

  private static WebArchive withPostbox(WebArchive war) throws Exception {
    war.addAsLibrary(
        ShrinkWrap.create(ExplodedImporter.class, "postbox-admin.jar")
            .importDirectory(new File(System.getProperty("admin.classes")))
            .as(JavaArchive.class));
    Path runtime = Path.of(System.getProperty("runtime.deploymentJars"), "runtime");
    try (Stream<Path> jars = Files.list(runtime)) {
      jars.forEach(jar -> war.addAsLibrary(jar.toFile(), jar.getFileName().toString()));
    }
    return war;
  }

  @ArquillianResource
  @OperateOnDeployment("root")
  URL app;

  @ArquillianResource
  @OperateOnDeployment("api")
  URL api;

  private final HttpClient http = HttpClient.newHttpClient();

  @Test
  void everyAdminEndpointIs401Anonymous403WithoutTheRoleAnd200ForTheOperator() throws Exception {
    List<String> reads =
        List.of(
            "admin/outbox",
            "admin/outbox/leases",
            "admin/outbox/failed",
            "admin/outbox/scheduled",
            "admin/inbox",
            "admin/dead-letters",
            "console/index.html",
            "console/console.js",
            "console/console.css");
    List<String> seen = new ArrayList<>();
    for (String path : reads) {
      seen.add(
          path
              + " "
              + get(path, null).statusCode()
              + " "
              + get(path, VIEWER).statusCode()
              + " "
              + get(path, OPERATOR).statusCode());
    }
    assertThat(seen).allSatisfy(line -> assertThat(line).endsWith(" 401 403 200"));

    String bulk = "admin/outbox/failed/retry?all=true";
    assertThat(post(bulk, null).statusCode()).isEqualTo(401);
    assertThat(post(bulk, VIEWER).statusCode()).isEqualTo(403);
    HttpResponse<String> retried = post(bulk, OPERATOR);
    assertThat(retried.statusCode()).as(retried.body()).isEqualTo(200);

    String cancelAll = "admin/outbox/scheduled/cancel?all=true";
    assertThat(post(cancelAll, null).statusCode()).isEqualTo(401);
    assertThat(post(cancelAll, VIEWER).statusCode()).isEqualTo(403);
    HttpResponse<String> cancelled = post(cancelAll, OPERATOR);
    assertThat(cancelled.statusCode()).as(cancelled.body()).isEqualTo(200);
    assertThat(cancelled.body()).contains("\"cancelled\":0");
  }

  @Test
  void theOperatorsAnswersAreJsonAndBadInputIsAClear400() throws Exception {
    HttpResponse<String> outbox = get("admin/outbox", OPERATOR);
    assertThat(outbox.headers().firstValue("Content-Type"))
        .hasValueSatisfying(t -> assertThat(t).startsWith("application/json"));
    assertThat(outbox.body()).contains("\"pending\":0").contains("\"failed\":0");

    HttpResponse<String> badId = post("admin/dead-letters/zero/replay", OPERATOR);
    assertThat(badId.statusCode()).isEqualTo(400);
    assertThat(badId.body()).contains("\"error\":\"id must be a positive whole number");
    assertThat(get("admin/dead-letters?limit=100000", OPERATOR).statusCode()).isEqualTo(400);
    assertThat(get("admin/dead-letters/42", OPERATOR).statusCode()).isEqualTo(404);

    assertThat(outbox.body()).contains("\"scheduled\":0");
    HttpResponse<String> noFilter = post("admin/outbox/scheduled/cancel", OPERATOR);
    assertThat(noFilter.statusCode()).isEqualTo(400);
    assertThat(noFilter.body()).contains("all=true");
    HttpResponse<String> badWindow =
        get("admin/outbox/scheduled?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z", OPERATOR);
    assertThat(badWindow.statusCode()).isEqualTo(400);
    assertThat(badWindow.body()).contains("from must be before to");
    assertThat(get("admin/outbox/scheduled?from=tomorrow", OPERATOR).statusCode()).isEqualTo(400);
    assertThat(get("admin/outbox/scheduled?after=-1", OPERATOR).statusCode()).isEqualTo(400);
    HttpResponse<String> page = get("admin/outbox/scheduled?type=Reminder&limit=10", OPERATOR);
    assertThat(page.statusCode()).isEqualTo(200);
    assertThat(page.body()).contains("\"events\":[]");
    HttpResponse<String> unknown = post("admin/outbox/scheduled/no-such-event/cancel", OPERATOR);
    assertThat(unknown.statusCode()).isEqualTo(404);
    assertThat(unknown.body()).contains("no scheduled outbox event no-such-event");
  }

  @Test
  void theConsoleIsServedWithItsGuardsAndReadsTheApiRelativeToTheApplication() throws Exception {
    HttpResponse<String> page = get("console/index.html", OPERATOR);
    assertThat(page.headers().firstValue("X-Frame-Options")).contains("DENY");
    assertThat(page.headers().firstValue("Content-Security-Policy"))
        .hasValueSatisfying(csp -> assertThat(csp).contains("frame-ancestors 'none'"));
    assertThat(page.body()).contains("<script src=\"console.js\">");
    String script = get("console/console.js", OPERATOR).body();
    assertThat(script).contains("\"../admin/outbox\"").doesNotContain("\"/admin/");
    assertThat(get("console/other.html", OPERATOR).statusCode()).isEqualTo(404);

    HttpResponse<String> crossSite =
        http.send(
            request("admin/outbox/failed/retry?all=true", OPERATOR)
                .header("Sec-Fetch-Site", "cross-site")
                .POST(HttpRequest.BodyPublishers.noBody())
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(crossSite.statusCode()).as("a cross-site change is refused").isEqualTo(403);
  }

  @Test
  void underAnotherJaxRsRootTheRoleCheckAloneStillAnswers401And403() throws Exception {
    String outbox = api + "api/admin/outbox";
    HttpResponse<String> anonymous = send(outbox, null);
    assertThat(anonymous.statusCode()).isEqualTo(401);
    assertThat(anonymous.body()).contains("sign in as an operator");
    HttpResponse<String> viewer = send(outbox, VIEWER);
    assertThat(viewer.statusCode()).isEqualTo(403);
    assertThat(viewer.body()).contains("the role postbox-admin is needed");
    assertThat(send(outbox, OPERATOR).statusCode()).isEqualTo(200);
    assertThat(send(api + "api/console/index.html", null).statusCode()).isEqualTo(401);
  }

  private HttpResponse<String> send(String url, String user) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url));
    if (user != null) {
      b.header("Authorization", basic(user));
    }
    return http.send(b.GET().build(), HttpResponse.BodyHandlers.ofString());
  }

  private static String basic(String user) {
    return "Basic " + Base64.getEncoder().encodeToString(user.getBytes(StandardCharsets.UTF_8));
  }

  private HttpResponse<String> get(String path, String user) throws Exception {
    return http.send(request(path, user).GET().build(), HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> post(String path, String user) throws Exception {
    return http.send(
        request(path, user).POST(HttpRequest.BodyPublishers.noBody()).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private HttpRequest.Builder request(String path, String user) {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(app + path));
    if (user != null) {
      b.header("Authorization", basic(user));
    }
    return b;
  }
}
