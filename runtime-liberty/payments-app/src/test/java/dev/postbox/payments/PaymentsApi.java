package dev.postbox.payments;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** A small HTTP client for the running payments server (the URL comes from the build). */
final class PaymentsApi {

  private final String url;

  /** The server the build started. */
  PaymentsApi() {
    this(defaultUrl());
  }

  static String defaultUrl() {
    return System.getProperty("payments.url", "http://localhost:9080");
  }

  PaymentsApi(String url) {
    this.url = url;
  }

  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  HttpResponse<String> get(String path, String... userPassword) {
    return send(HttpRequest.newBuilder(URI.create(url + path)).GET(), userPassword);
  }

  HttpResponse<String> post(String path, String json, String... headersThenUser) {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create(url + path))
            .header("Content-Type", "application/json")
            .POST(
                json == null
                    ? HttpRequest.BodyPublishers.noBody()
                    : HttpRequest.BodyPublishers.ofString(json));
    return send(b, headersThenUser);
  }

  /** Extra arguments: header name/value pairs, then optionally "user:password" last. */
  private HttpResponse<String> send(HttpRequest.Builder b, String... extra) {
    int pairs = extra.length / 2 * 2;
    for (int i = 0; i < pairs; i += 2) {
      b.header(extra[i], extra[i + 1]);
    }
    if (extra.length % 2 == 1) {
      b.header(
          "Authorization",
          "Basic "
              + Base64.getEncoder()
                  .encodeToString(extra[extra.length - 1].getBytes(StandardCharsets.UTF_8)));
    }
    try {
      return http.send(
          b.timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** A number field of a flat JSON object. */
  static long number(String json, String field) {
    Matcher m = Pattern.compile("\"" + field + "\":(-?\\d+)").matcher(json);
    if (!m.find()) {
      throw new AssertionError("no number '" + field + "' in " + json);
    }
    return Long.parseLong(m.group(1));
  }

  /** A string field of a flat JSON object. */
  static String text(String json, String field) {
    Matcher m = Pattern.compile("\"" + field + "\":\"([^\"]*)\"").matcher(json);
    if (!m.find()) {
      throw new AssertionError("no string '" + field + "' in " + json);
    }
    return m.group(1);
  }

  long ledger(String field) {
    return number(get("/ledger").body(), field);
  }
}
