package dev.postbox.admin;

import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.container.ContainerRequestFilter;
import jakarta.ws.rs.container.ContainerResponseContext;
import jakarta.ws.rs.container.ContainerResponseFilter;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.ext.Provider;
import java.net.URI;
import java.util.Locale;
import java.util.Set;

/**
 * What a browser must not be tricked into, on the resources marked {@link AdminOnly}:
 *
 * <ul>
 *   <li><b>Cross-site requests that change state</b> under {@code /admin} (CSRF: a form on another
 *       site posting with the admin's cached Basic credentials). Refused with 403 when the browser
 *       says the request is cross-site ({@code Sec-Fetch-Site}), or, from a browser that does not
 *       send that header, comes from another origin ({@code Origin}). Clients that are not browsers
 *       (curl, scripts) send neither header and are not affected.
 *   <li><b>Framing</b> of the console (clickjacking), and content sniffing: {@code
 *       X-Frame-Options}, a {@code Content-Security-Policy} allowing only the console's own files,
 *       and {@code X-Content-Type-Options} on every answer under {@code /console} and {@code
 *       /admin}.
 * </ul>
 */
@AdminOnly
@Provider
public class BrowserGuard implements ContainerRequestFilter, ContainerResponseFilter {

  private static final Set<String> SAFE_METHODS = Set.of("GET", "HEAD", "OPTIONS");

  @Override
  public void filter(ContainerRequestContext request) {
    if (SAFE_METHODS.contains(request.getMethod())) {
      return;
    }
    String site = request.getHeaderString("Sec-Fetch-Site");
    if (site != null) {
      // The browser's own verdict; it holds behind a TLS-terminating proxy too, where Origin says
      // https and this server sees http.
      String s = site.toLowerCase(Locale.ROOT);
      if (!s.equals("same-origin") && !s.equals("none")) {
        request.abortWith(forbidden("cross-site requests may not change state here"));
      }
      return;
    }
    String origin = request.getHeaderString("Origin"); // older browsers: compare the origin
    if (origin != null && !sameOrigin(origin, request.getUriInfo().getBaseUri())) {
      request.abortWith(forbidden("requests from another origin may not change state here"));
    }
  }

  @Override
  public void filter(ContainerRequestContext request, ContainerResponseContext response) {
    response.getHeaders().putSingle("X-Frame-Options", "DENY");
    response
        .getHeaders()
        .putSingle(
            "Content-Security-Policy",
            "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'");
    response.getHeaders().putSingle("X-Content-Type-Options", "nosniff");
  }

  static boolean sameOrigin(String origin, URI base) {
    try {
      URI o = URI.create(origin.trim());
      return o.getScheme() != null
          && o.getScheme().equalsIgnoreCase(base.getScheme())
          && o.getHost() != null
          && o.getHost().equalsIgnoreCase(base.getHost())
          && port(o) == port(base);
    } catch (IllegalArgumentException malformed) {
      return false;
    }
  }

  private static int port(URI u) {
    if (u.getPort() != -1) {
      return u.getPort();
    }
    return "https".equalsIgnoreCase(u.getScheme()) ? 443 : 80;
  }

  private static Response forbidden(String message) {
    return Response.status(Response.Status.FORBIDDEN)
        .type(MediaType.APPLICATION_JSON)
        .entity(ApiError.error(message))
        .build();
  }
}
