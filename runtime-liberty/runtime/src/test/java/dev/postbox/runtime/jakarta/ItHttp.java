package dev.postbox.runtime.jakarta;

import java.io.IOException;
import java.net.URI;
import java.net.URL;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/**
 * HTTP to a deployed test application ({@code it} package) on the in-container tests' server: paths
 * under the application's context root, and {@link #server} paths (health, metrics) at the root.
 */
final class ItHttp {

  private final String app;
  private final String server;
  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  /**
   * @param deployment the deployment's URL, as Arquillian injects it
   */
  ItHttp(URL deployment) {
    String base = deployment.toString();
    this.app = base.endsWith("/") ? base.substring(0, base.length() - 1) : base;
    this.server = deployment.getProtocol() + "://" + deployment.getAuthority();
  }

  HttpResponse<String> post(String path, String... headers)
      throws IOException, InterruptedException {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(app + path));
    if (headers.length > 0) {
      b.headers(headers);
    }
    return http.send(
        b.timeout(Duration.ofSeconds(30)).POST(HttpRequest.BodyPublishers.noBody()).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  HttpResponse<String> get(String path) throws IOException, InterruptedException {
    return send(app + path);
  }

  /** A path at the server's root, such as {@code /health/ready} or {@code /metrics}. */
  HttpResponse<String> server(String path) throws IOException, InterruptedException {
    return send(server + path);
  }

  private HttpResponse<String> send(String url) throws IOException, InterruptedException {
    return http.send(
        HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(30)).GET().build(),
        HttpResponse.BodyHandlers.ofString());
  }
}
