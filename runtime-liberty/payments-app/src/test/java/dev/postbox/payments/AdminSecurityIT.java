package dev.postbox.payments;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The admin API and console need the admin role; input is validated. */
class AdminSecurityIT {

  private final PaymentsApi api = new PaymentsApi();

  @Test
  void withoutCredentialsTheAdminApiAndConsoleAnswer401() {
    assertThat(api.get("/admin/outbox").statusCode()).isEqualTo(401);
    assertThat(api.get("/admin/dead-letters").statusCode()).isEqualTo(401);
    assertThat(api.post("/admin/load?orders=1", null).statusCode()).isEqualTo(401);
    assertThat(api.get("/console/index.html").statusCode()).isEqualTo(401);
    assertThat(api.get("/admin/outbox", "admin:wrong").statusCode()).isEqualTo(401);
  }

  @Test
  void anAuthenticatedUserWithoutTheAdminRoleGets403() {
    assertThat(api.get("/admin/outbox", "viewer:viewer").statusCode()).isEqualTo(403);
    assertThat(api.post("/admin/dead-letters/1/discard", null, "viewer:viewer").statusCode())
        .isEqualTo(403);
  }

  @Test
  void theAdminGetsIn() {
    var outbox = api.get("/admin/outbox", "admin:admin");
    assertThat(outbox.statusCode()).isEqualTo(200);
    assertThat(outbox.body()).contains("\"pending\":");
    // Every one of the 64 partitions is listed under some owner, the last one included.
    assertThat(api.get("/admin/outbox/leases", "admin:admin").body())
        .containsPattern("[\\[,]63\\]");
    assertThat(api.get("/admin/inbox", "admin:admin").body())
        .contains("orders/payments")
        .contains("payments/notifications");
  }

  @Test
  void badIdsAndHugePagesGet400WithAMessage() {
    var badId = api.get("/admin/dead-letters/abc", "admin:admin");
    assertThat(badId.statusCode()).isEqualTo(400);
    assertThat(badId.body()).contains("id must be a positive whole number");
    assertThat(api.post("/admin/outbox/failed/-3/retry", null, "admin:admin").statusCode())
        .isEqualTo(400);
    var hugePage = api.get("/admin/dead-letters?limit=1000000", "admin:admin");
    assertThat(hugePage.statusCode()).isEqualTo(400);
    assertThat(hugePage.body()).contains("limit must be between 1 and 500");
    assertThat(api.get("/admin/dead-letters?subscription=nope", "admin:admin").statusCode())
        .isEqualTo(400);
    assertThat(api.post("/admin/load?orders=0", null, "admin:admin").statusCode()).isEqualTo(400);
    assertThat(api.get("/admin/dead-letters/99999999", "admin:admin").statusCode()).isEqualTo(404);
  }

  @Test
  void failedOutboxRowsAreRetriedAndDiscardedInBulkByFilterOnlyWhenAFilterOrAllIsGiven() {
    assertThat(api.post("/admin/outbox/failed/retry?all=true", null, "viewer:viewer").statusCode())
        .isEqualTo(403);
    var noFilter = api.post("/admin/outbox/failed/discard", null, "admin:admin");
    assertThat(noFilter.statusCode()).isEqualTo(400);
    assertThat(noFilter.body()).contains("all=true");
    var badTime = api.post("/admin/outbox/failed/retry?from=yesterday", null, "admin:admin");
    assertThat(badTime.statusCode()).isEqualTo(400);
    assertThat(badTime.body()).contains("ISO-8601").doesNotContain("Exception");
    assertThat(
            api.post(
                    "/admin/outbox/failed/retry?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z",
                    null,
                    "admin:admin")
                .statusCode())
        .isEqualTo(400);
    // Times no database stores, and a NUL, are 400s, never 500s.
    assertThat(
            api.post("/admin/outbox/failed/retry?to=%2B300000-01-01T00:00:00Z", null, "admin:admin")
                .statusCode())
        .isEqualTo(400);
    assertThat(
            api.post("/admin/outbox/failed/discard?destination=a%00b", null, "admin:admin")
                .statusCode())
        .isEqualTo(400);
    var none =
        api.post(
            "/admin/outbox/failed/discard?destination=no-such-topic&type=x", null, "admin:admin");
    assertThat(none.statusCode()).isEqualTo(200);
    assertThat(none.body()).contains("\"discarded\":0");
    var all = api.post("/admin/outbox/failed/retry?all=true", null, "admin:admin");
    assertThat(all.statusCode()).isEqualTo(200);
    assertThat(all.body()).contains("\"retried\":");
    assertThat(api.get("/admin/outbox", "admin:admin").body()).contains("\"brokerOutages\":[]");
  }

  @Test
  void healthAndMetricsAreOpenForProbesAndScrapers() {
    var ready = api.get("/health/ready");
    assertThat(ready.statusCode()).isEqualTo(200);
    assertThat(ready.body()).contains("postbox-outbox").contains("postbox-inbox");
    assertThat(api.get("/health/live").body()).contains("postbox-inbox-loops");
    var metrics = api.get("/metrics");
    assertThat(metrics.statusCode()).isEqualTo(200);
    assertThat(metrics.body())
        .contains("postbox_outbox_pending")
        .contains("postbox_inbox_processed_total");
  }

  @Test
  void theLoadGeneratorIsBoundedPerCall() {
    var tooMany = api.post("/admin/load?orders=1001", null, "admin:admin");
    assertThat(tooMany.statusCode()).isEqualTo(400);
    assertThat(tooMany.body()).contains("1000");
  }

  @Test
  void aCrossSiteFormPostWithCachedCredentialsIsRefused() {
    // What a form on another site posting with the admin's cached Basic credentials looks like.
    var crossSite =
        api.post(
            "/admin/load?orders=1",
            null,
            "Origin",
            "https://evil.example",
            "Sec-Fetch-Site",
            "cross-site",
            "admin:admin");
    assertThat(crossSite.statusCode()).isEqualTo(403);
    assertThat(crossSite.body()).contains("cross-site");
    var otherOrigin =
        api.post(
            "/admin/dead-letters/1/discard", null, "Origin", "http://evil.example", "admin:admin");
    assertThat(otherOrigin.statusCode()).isEqualTo(403);
  }

  @Test
  void theConsoleCannotBeFramedAndAnswersCarryNoStackTrace() {
    var console = api.get("/console/index.html", "admin:admin");
    assertThat(console.statusCode()).isEqualTo(200);
    assertThat(console.headers().firstValue("X-Frame-Options")).contains("DENY");
    assertThat(console.headers().firstValue("Content-Security-Policy").orElse(""))
        .contains("frame-ancestors 'none'");
    var unknown = api.get("/no-such-endpoint");
    assertThat(unknown.statusCode()).isEqualTo(404);
    assertThat(unknown.body()).doesNotContain("Exception").doesNotContain("<html");
  }

  @Test
  void theEmbeddedBrokerRefusesTcpClientsWithoutCredentials() throws Exception {
    try (var factory =
        new org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory(
            System.getProperty("payments.artemis.url"))) {
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> factory.createConnection().close())
          .isInstanceOf(jakarta.jms.JMSSecurityException.class);
      org.assertj.core.api.Assertions.assertThatThrownBy(
              () -> factory.createConnection("payments-it", "wrong").close())
          .isInstanceOf(jakarta.jms.JMSSecurityException.class);
      factory
          .createConnection(
              System.getProperty("payments.artemis.user"),
              System.getProperty("payments.artemis.password"))
          .close();
    }
  }
}
