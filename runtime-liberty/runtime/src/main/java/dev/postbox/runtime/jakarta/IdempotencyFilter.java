package dev.postbox.runtime.jakarta;

import dev.postbox.runtime.api.Idempotent;
import dev.postbox.runtime.common.Fingerprint;
import jakarta.annotation.Priority;
import jakarta.inject.Inject;
import jakarta.ws.rs.Priorities;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.container.ContainerRequestFilter;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.ext.Provider;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;

/**
 * For {@link Idempotent} methods: reads the {@code Idempotency-Key} header, checks it, and takes a
 * fingerprint of the request (SHA-256 of method, path and body) for the interceptor. The body is
 * read once, bounded by {@code postbox.idempotency.max-body-bytes}, and handed on unchanged.
 */
@Provider
@Idempotent
@Priority(Priorities.USER)
public class IdempotencyFilter implements ContainerRequestFilter {

  /** At most this many characters; printable ASCII only (it is stored and logged). */
  static final int MAX_KEY_LENGTH = 200;

  @Inject IdempotencyRequest request;

  @Inject PostboxRuntime runtime;

  @Override
  public void filter(ContainerRequestContext ctx) throws IOException {
    String key = ctx.getHeaderString(Idempotent.HEADER);
    if (key == null) {
      return;
    }
    if (!validKey(key)) {
      ctx.abortWith(
          error(
              400,
              Idempotent.HEADER
                  + " must be 1 to "
                  + MAX_KEY_LENGTH
                  + " printable ASCII characters without spaces"));
      return;
    }
    int max = runtime.idempotency().maxBodyBytes();
    byte[] body;
    try (InputStream in = ctx.getEntityStream()) {
      body = in == null ? new byte[0] : in.readNBytes(max + 1);
    }
    if (body.length > max) {
      ctx.abortWith(error(413, "the request body is larger than " + max + " bytes"));
      return;
    }
    ctx.setEntityStream(new ByteArrayInputStream(body));
    var principal =
        ctx.getSecurityContext() == null ? null : ctx.getSecurityContext().getUserPrincipal();
    String scope = scope(principal == null ? null : principal.getName());
    request.set(scope, key, fingerprint(ctx.getMethod(), ctx.getUriInfo().getPath(), body));
  }

  /** Whose keys these are: {@code anonymous}, the user, or a hash of a long user name. */
  static String scope(String user) {
    if (user == null) {
      return "anonymous";
    }
    if (user.length() <= 150) {
      return "user:" + user;
    }
    return "user-sha256:" + fingerprint("", "", user.getBytes(StandardCharsets.UTF_8));
  }

  static boolean validKey(String key) {
    if (key.isEmpty() || key.length() > MAX_KEY_LENGTH) {
      return false;
    }
    return key.chars().allMatch(ch -> ch > 0x20 && ch < 0x7f);
  }

  static String fingerprint(String method, String path, byte[] body) {
    return Fingerprint.ofParts(
        method.getBytes(StandardCharsets.UTF_8), path.getBytes(StandardCharsets.UTF_8), body);
  }

  static Response error(int status, String message) {
    return Response.status(status)
        .type(MediaType.APPLICATION_JSON)
        .entity("{\"error\":\"" + message.replace("\"", "'") + "\"}")
        .build();
  }
}
