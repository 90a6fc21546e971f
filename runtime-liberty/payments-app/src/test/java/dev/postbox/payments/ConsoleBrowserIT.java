package dev.postbox.payments;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.spi.Envelope;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Base64;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.openqa.selenium.By;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The console in a real headless Chromium (Debian's chromium and chromium-driver): the page loads,
 * shows the numbers the API reports, and its Replay button replays a dead letter.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ConsoleBrowserIT {

  private static final Path CHROMIUM = Path.of("/usr/bin/chromium");
  private static final Path CHROMEDRIVER = Path.of("/usr/bin/chromedriver");

  private final PaymentsApi api = new PaymentsApi();
  private ChromeDriver browser;

  @BeforeAll
  void openBrowser() {
    boolean installed = Files.isExecutable(CHROMIUM) && Files.isExecutable(CHROMEDRIVER);
    if (!installed && "1".equals(System.getenv("CI_REQUIRE_BROWSER"))) {
      throw new IllegalStateException(
          "the console test needs Chromium: apt-get install chromium chromium-driver");
    }
    Assumptions.assumeTrue(installed, "Chromium is not installed (chromium, chromium-driver)");
    ChromeOptions options = new ChromeOptions();
    options.setBinary(CHROMIUM.toFile());
    // Headless, and quiet: this machine has no network beyond localhost.
    options.addArguments(
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,1600");
    ChromeDriverService service =
        new ChromeDriverService.Builder().usingDriverExecutable(CHROMEDRIVER.toFile()).build();
    browser = new ChromeDriver(service, options);
    // Log in as the admin for every request the page makes (basic auth, as a browser would).
    String basic =
        Base64.getEncoder().encodeToString("admin:admin".getBytes(StandardCharsets.UTF_8));
    browser.executeCdpCommand("Network.enable", Map.of());
    browser.executeCdpCommand(
        "Network.setExtraHTTPHeaders",
        Map.of("headers", Map.of("Authorization", "Basic " + basic)));
  }

  @AfterAll
  void closeBrowser() {
    if (browser != null) {
      browser.quit();
    }
  }

  @Test
  void theConsoleShowsTheApisNumbersAndItsReplayButtonReplays() throws Exception {
    api.post("/orders", "{\"customer\":\"console\",\"amountCents\":321}");
    Envelope order = DirectPublish.duplicatesAndAConflict("console-" + System.nanoTime());
    await()
        .atMost(Duration.ofSeconds(30))
        .until(() -> DirectPublish.conflictLetterFor(api, order.id()) != null);
    long letterId = PaymentsApi.number(DirectPublish.conflictLetterFor(api, order.id()), "id");

    browser.get(PaymentsApi.defaultUrl() + "/console/index.html");
    WebDriverWait wait = new WebDriverWait(browser, Duration.ofSeconds(20));
    wait.until(b -> b.findElement(By.id("updated")).getText().startsWith("updated"));

    // The numbers on the page are the API's: the sums over /admin/inbox's subscriptions.
    await()
        .atMost(Duration.ofSeconds(20))
        .until(
            () ->
                text("inbox-processed").equals(Long.toString(inboxSum("processed")))
                    && text("inbox-dead-letters")
                        .equals(Long.toString(inboxSum("openDeadLetters"))));
    assertThat(text("outbox-pending")).matches("\\d+");
    assertThat(browser.findElement(By.cssSelector("#inbox tbody")).getText())
        .contains("orders/payments")
        .contains("payments/notifications");
    assertThat(browser.findElement(By.id("leases")).getText()).contains("partitions");
    // The chart draws once it has two readings (the page polls every two seconds).
    wait.until(b -> b.findElements(By.cssSelector("#chart polyline")).size() == 2);

    // Replay the conflict from its row.
    WebElement row =
        wait.until(
            b -> b.findElement(By.cssSelector("#dead-letters tr[data-id='" + letterId + "']")));
    assertThat(row.getText()).contains("CONFLICT");
    row.findElement(By.cssSelector("button.replay")).click();
    // A CONFLICT is replayed only on the operator's explicit decision: the console asks.
    org.openqa.selenium.Alert ask =
        wait.until(org.openqa.selenium.support.ui.ExpectedConditions.alertIsPresent());
    assertThat(ask.getText()).contains("CONFLICT");
    ask.accept();
    wait.until(b -> b.findElement(By.id("dead-letter-message")).getText().contains("REPLAYED"));
    await()
        .atMost(Duration.ofSeconds(10))
        .until(
            () ->
                browser
                    .findElements(By.cssSelector("#dead-letters tr[data-id='" + letterId + "']"))
                    .isEmpty());
    assertThat(api.get("/admin/dead-letters/" + letterId, "admin:admin").body())
        .contains("\"status\":\"REPLAYED\"");

    Files.write(
        Path.of(System.getProperty("java.io.tmpdir"), "console.png"),
        browser.getScreenshotAs(OutputType.BYTES));
  }

  @Test
  void theConsoleRetriesFailedOutboxRowsInBulkByFilterAndSaysWhetherTheBrokerTakesEvents() {
    browser.get(PaymentsApi.defaultUrl() + "/console/index.html");
    WebDriverWait wait = new WebDriverWait(browser, Duration.ofSeconds(20));
    wait.until(b -> b.findElement(By.id("broker-status")).getText().contains("Broker: available"));
    WebElement form = browser.findElement(By.id("outbox-bulk"));
    form.findElement(By.name("destination")).sendKeys("no-such-destination");
    form.findElement(By.name("from")).sendKeys("2026-01-01T00:00:00Z");
    form.findElement(By.cssSelector("button.bulk-retry")).click();
    wait.until(
        b -> b.findElement(By.id("outbox-bulk-message")).getText().equals("0 rows sent again"));
    // A bad time is the API's clear 400, shown as it is.
    form.findElement(By.name("to")).sendKeys("yesterday");
    form.findElement(By.cssSelector("button.bulk-retry")).click();
    wait.until(b -> b.findElement(By.id("outbox-bulk-message")).getText().contains("ISO-8601"));
  }

  @Test
  void theConsoleGroupsDeadLettersByFailureAndDiscardsAGroupAfterAsking() {
    Envelope unheard = DirectPublish.unheardOf("console-group-" + System.nanoTime());
    DirectPublish.publish(unheard);
    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () ->
                api.get(
                        "/admin/dead-letters?subscription=orders%2Fpayments&limit=500",
                        "admin:admin")
                    .body()
                    .contains(unheard.id()));

    browser.get(PaymentsApi.defaultUrl() + "/console/index.html");
    WebDriverWait wait = new WebDriverWait(browser, Duration.ofSeconds(20));
    By group = By.cssSelector("#dead-letter-groups tr[data-reason='UNKNOWN_TYPE']");
    WebElement row = wait.until(b -> b.findElement(group));
    assertThat(row.getText()).contains("orders/payments").contains("no handler for type");
    row.findElement(By.cssSelector("button.group-discard")).click();
    org.openqa.selenium.Alert ask =
        wait.until(org.openqa.selenium.support.ui.ExpectedConditions.alertIsPresent());
    assertThat(ask.getText()).contains("Discard").contains("UNKNOWN_TYPE");
    ask.accept();
    wait.until(
        b -> b.findElement(By.id("dead-letter-group-message")).getText().startsWith("Discarded"));
    await().atMost(Duration.ofSeconds(10)).until(() -> browser.findElements(group).isEmpty());
    assertThat(
            api.get("/admin/dead-letters?subscription=orders%2Fpayments&limit=500", "admin:admin")
                .body())
        .doesNotContain(unheard.id());
  }

  /** A field summed over the subscriptions /admin/inbox lists. */
  private long inboxSum(String field) {
    java.util.regex.Matcher m =
        java.util.regex.Pattern.compile("\"" + field + "\":(\\d+)")
            .matcher(api.get("/admin/inbox", "admin:admin").body());
    long sum = 0;
    while (m.find()) {
      sum += Long.parseLong(m.group(1));
    }
    return sum;
  }

  private String text(String id) {
    return browser.findElement(By.id(id)).getText();
  }
}
