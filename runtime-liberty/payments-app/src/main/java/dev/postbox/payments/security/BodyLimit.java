package dev.postbox.payments.security;

import dev.postbox.payments.Json;
import jakarta.annotation.Priority;
import jakarta.inject.Inject;
import jakarta.ws.rs.Priorities;
import jakarta.ws.rs.WebApplicationException;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.container.ContainerRequestFilter;
import jakarta.ws.rs.container.PreMatching;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.ext.Provider;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Map;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * Refuses request bodies larger than {@code payments.max-request-bytes} (default 64 KiB) with 413:
 * by their {@code Content-Length} before reading, and by counting otherwise (chunked bodies).
 */
@Provider
@PreMatching
@Priority(Priorities.AUTHENTICATION - 100)
public class BodyLimit implements ContainerRequestFilter {

  @Inject
  @ConfigProperty(name = "payments.max-request-bytes", defaultValue = "65536")
  long maxBytes;

  @Override
  public void filter(ContainerRequestContext request) {
    if (request.getLength() > maxBytes) {
      request.abortWith(tooLarge(maxBytes));
      return;
    }
    if (request.hasEntity()) {
      request.setEntityStream(new Bounded(request.getEntityStream(), maxBytes));
    }
  }

  static Response tooLarge(long max) {
    return Response.status(413)
        .type(MediaType.APPLICATION_JSON)
        .entity(Json.write(Map.of("error", "the request body is larger than " + max + " bytes")))
        .build();
  }

  /** Counts what is read, and stops the request with 413 past the limit. */
  private static final class Bounded extends FilterInputStream {
    private final long max;
    private long read;

    Bounded(InputStream in, long max) {
      super(in);
      this.max = max;
    }

    @Override
    public int read() throws IOException {
      int b = super.read();
      if (b >= 0) {
        count(1);
      }
      return b;
    }

    @Override
    public int read(byte[] buf, int off, int len) throws IOException {
      int n = super.read(buf, off, len);
      if (n > 0) {
        count(n);
      }
      return n;
    }

    private void count(int n) {
      read += n;
      if (read > max) {
        throw new WebApplicationException(tooLarge(max));
      }
    }
  }
}
