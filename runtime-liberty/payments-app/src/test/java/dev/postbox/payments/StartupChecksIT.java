package dev.postbox.payments;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The payments server refuses to start on a configuration that would lose orders or expose the
 * admin API, as a user would meet it: a real Liberty server with the app as built.
 */
class StartupChecksIT {

  /** The embedded default's broker settings, which the default Maven profile gives the build. */
  private static Map<String, String> embedded(String... more) {
    Map<String, String> v = new java.util.HashMap<>();
    v.put("postbox.broker", "artemis");
    v.put("postbox.broker.url", "vm://0");
    v.put("payments.embedded-artemis", "true");
    for (int i = 0; i < more.length; i += 2) {
      v.put(more[i], more[i + 1]);
    }
    return v;
  }

  @Test
  void anH2UrlWithItsDefaultWriteDelayIsRefusedNamingTheSettingAndTheOverrideStartsAnyway() {
    String risky = "jdbc:h2:./data/refused;DB_CLOSE_ON_EXIT=FALSE";
    VariantServer refused =
        new VariantServer("artemis", "startup-h2-refused", embedded("db.url", risky));
    try {
      refused.startAndAwaitLog("refuses to start");
      assertThat(refused.log()).contains("WRITE_DELAY=500").contains(";WRITE_DELAY=0");
      assertThat(new PaymentsApi(refused.url()).get("/health/ready").statusCode())
          .as("never ready")
          .isNotEqualTo(200);
    } finally {
      refused.close();
    }
    VariantServer accepted =
        new VariantServer(
            "artemis",
            "startup-h2-accepted",
            embedded("db.url", risky, "postbox.durability.accept-unsafe", "true"));
    try {
      accepted.start();
      assertThat(new PaymentsApi(accepted.url()).get("/health/ready").body()).contains("UNSAFE");
    } finally {
      accepted.close();
    }
  }

  @Test
  void theShippedAdminPasswordsAreRefusedOutsideDevMode() {
    VariantServer server =
        new VariantServer("artemis", "startup-passwords", embedded("payments.dev-mode", "false"));
    try {
      server.startAndAwaitLog("refuses to start with shipped or empty passwords");
      assertThat(server.log()).contains("admin.password is the shipped demo password");
      assertThat(server.log()).doesNotContain("password=admin");
    } finally {
      server.close();
    }
  }
}
